/* The commands' cgroups: see cgroup.h. */
#include "cgroup.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int has_controller(const struct config *cfg, const struct cgroot *root, const char *controller) {
  if (cfg->version == 2) return 1;
  size_t n = strlen(controller);
  for (const char *p = root->name; *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == n && !memcmp(p, controller, n)) return 1;
    if (!c) break;
    p = c + 1;
  }
  return 0;
}

void cg_path(const struct config *cfg, int r, const char *name, const char *file, char *out, size_t cap) {
  if (file) snprintf(out, cap, "%s/%s/%s", cfg->roots[r].dir, name, file);
  else snprintf(out, cap, "%s/%s", cfg->roots[r].dir, name);
}

static void remove_dirs(const struct config *cfg, const char *name) {
  for (int r = 0; r < cfg->nroots; r++) {
    char path[4096];
    cg_path(cfg, r, name, NULL, path, sizeof path);
    rmdir(path);
  }
}

int cg_create(const struct config *cfg, const char *name, struct buf *err) {
  for (int r = 0; r < cfg->nroots; r++) {
    char path[4096];
    cg_path(cfg, r, name, NULL, path, sizeof path);
    if (mkdir(path, 0777) != 0) {
      buf_printf(err, "%s, mkdir '%s'", strerror(errno), path);
      remove_dirs(cfg, name);
      return -1;
    }
  }
  return 0;
}

int cg_limit(const struct config *cfg, const char *name, int has_mem, long mem_mib, int has_pids, long pids,
             struct buf *err) {
  for (int r = 0; r < cfg->nroots; r++) {
    char path[4096], value[32];
    if (has_mem && has_controller(cfg, &cfg->roots[r], "memory")) {
      cg_path(cfg, r, name, cfg->version == 2 ? "memory.max" : "memory.limit_in_bytes", path, sizeof path);
      snprintf(value, sizeof value, "%lld", (long long)mem_mib * 1024 * 1024);
      if (write_text(path, value)) {
        buf_printf(err, "%s: write %s", strerror(errno), path);
        return -1;
      }
    }
    if (has_pids && has_controller(cfg, &cfg->roots[r], "pids")) {
      cg_path(cfg, r, name, "pids.max", path, sizeof path);
      snprintf(value, sizeof value, "%ld", pids);
      if (write_text(path, value)) {
        buf_printf(err, "%s: write %s", strerror(errno), path);
        return -1;
      }
    }
  }
  return 0;
}

void cg_no_forks(const struct config *cfg, const char *name) {
  for (int r = 0; r < cfg->nroots; r++) {
    if (!has_controller(cfg, &cfg->roots[r], "pids")) continue;
    char path[4096];
    cg_path(cfg, r, name, "pids.max", path, sizeof path);
    write_text(path, "0");
  }
}

int cg_freeze(const struct config *cfg, const char *name, int frozen) {
  int done = 0;
  for (int r = 0; r < cfg->nroots; r++) {
    char path[4096];
    if (cfg->version == 2) {
      cg_path(cfg, r, name, "cgroup.freeze", path, sizeof path);
      if (write_text(path, frozen ? "1" : "0") == 0) done = 1;
    } else if (has_controller(cfg, &cfg->roots[r], "freezer")) {
      cg_path(cfg, r, name, "freezer.state", path, sizeof path);
      if (write_text(path, frozen ? "FROZEN" : "THAWED") == 0) done = 1;
    }
  }
  return done;
}

size_t cg_procs(const struct config *cfg, const char *name, pid_t **out) {
  size_t n = 0, cap = 0;
  pid_t *pids = NULL;
  for (int r = 0; r < cfg->nroots; r++) {
    char path[4096];
    cg_path(cfg, r, name, "cgroup.procs", path, sizeof path);
    FILE *f = fopen(path, "re");
    if (!f) continue;
    long v;
    while (fscanf(f, "%ld", &v) == 1) {
      if (v <= 0) continue;
      size_t i;
      for (i = 0; i < n; i++)
        if (pids[i] == (pid_t)v) break;
      if (i < n) continue;
      if (n == cap) {
        size_t c = cap ? cap * 2 : 16;
        pid_t *p = realloc(pids, c * sizeof *p);
        if (!p) break;
        pids = p;
        cap = c;
      }
      pids[n++] = (pid_t)v;
    }
    fclose(f);
  }
  if (out) *out = pids;
  else free(pids);
  return n;
}

void cg_remove(const struct config *cfg, const char *name) {
  if (cg_procs(cfg, name, NULL) > 0) return;
  remove_dirs(cfg, name);
}

/* ---- the removal thread: a queue of names, taken in order ---- */

static struct {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  struct names queue;
  const struct config *cfg;
  int started;
} removal = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, NULL, 0};

static void *removal_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&removal.lock);
  for (;;) {
    while (removal.queue.n == 0) pthread_cond_wait(&removal.wake, &removal.lock);
    struct names batch = removal.queue;
    memset(&removal.queue, 0, sizeof removal.queue);
    pthread_mutex_unlock(&removal.lock);
    for (size_t i = 0; i < batch.n; i++) cg_remove(removal.cfg, batch.v[i]);
    names_clear(&batch);
    pthread_mutex_lock(&removal.lock);
  }
  return NULL;
}

void cg_remove_later(const struct config *cfg, const char *name) {
  pthread_mutex_lock(&removal.lock);
  if (!removal.started) {
    removal.cfg = cfg;
    /* one malloc arena for both threads: the thread costs boxd no memory of its own */
    mallopt(M_ARENA_MAX, 1);
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* signals stay with the main thread (its signalfd): the thread blocks them all */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    removal.started = pthread_create(&t, &attr, removal_main, NULL) == 0;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
  }
  if (!removal.started) {
    /* no thread (out of resources): remove here, as before */
    pthread_mutex_unlock(&removal.lock);
    cg_remove(cfg, name);
    return;
  }
  names_add(&removal.queue, name);
  pthread_cond_signal(&removal.wake);
  pthread_mutex_unlock(&removal.lock);
}

void cg_usage(const struct config *cfg, const char *name, struct usage *u) {
  memset(u, 0, sizeof *u);
  for (int r = 0; r < cfg->nroots; r++) {
    const struct cgroot *root = &cfg->roots[r];
    char path[4096], text[4096];
    if (cfg->version == 1) {
      if (has_controller(cfg, root, "cpuacct")) {
        cg_path(cfg, r, name, "cpuacct.usage", path, sizeof path);
        if (read_small(path, text, sizeof text) < 0) continue;
        u->cpu_ns = strtoull(text, NULL, 10), u->has_cpu = 1;
      }
      if (has_controller(cfg, root, "memory")) {
        cg_path(cfg, r, name, "memory.max_usage_in_bytes", path, sizeof path);
        if (read_small(path, text, sizeof text) < 0) continue;
        u->peak_bytes = strtoull(text, NULL, 10), u->has_peak = 1;
      }
    } else {
      cg_path(cfg, r, name, "cpu.stat", path, sizeof path);
      if (read_small(path, text, sizeof text) < 0) continue;
      char *line = strstr(text, "usage_usec ");
      if (line && (line == text || line[-1] == '\n'))
        u->cpu_ns = strtoull(line + 11, NULL, 10) * 1000ULL, u->has_cpu = 1;
      cg_path(cfg, r, name, "memory.peak", path, sizeof path);
      if (read_small(path, text, sizeof text) < 0) continue;
      u->peak_bytes = strtoull(text, NULL, 10), u->has_peak = 1;
    }
  }
}

void cg_names(const struct config *cfg, struct names *out) {
  if (cfg->nroots == 0) return;
  DIR *d = opendir(cfg->roots[0].dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] != 'x') continue;
    if (de->d_type != DT_DIR) {
      if (de->d_type != DT_UNKNOWN) continue;
      struct stat st;
      char path[4096];
      cg_path(cfg, 0, de->d_name, NULL, path, sizeof path);
      if (stat(path, &st) || !S_ISDIR(st.st_mode)) continue;
    }
    names_add(out, de->d_name);
  }
  closedir(d);
}
