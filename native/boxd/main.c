/* boxd's start and its loop: see boxd.h for the parts. */
#include "boxd.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "bridge.h"
#include "calls.h"
#include "cgroup.h"
#include "conn.h"
#include "exec.h"
#include "pty.h"

#define SWEEP_MS 10000
#define WATCH_MS 1000

/* ---- arguments ---------------------------------------------------------------------- */

static void usage_die(const char *fmt, const char *arg) __attribute__((noreturn));
static void usage_die(const char *fmt, const char *arg) {
  dprintf(2, "boxd: ");
  dprintf(2, fmt, arg);
  dprintf(2, "\n");
  exit(1);
}

static void parse_args(struct config *cfg, int argc, char **argv) {
  for (int i = 1; i < argc; i += 2) {
    const char *key = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
    if (!value) usage_die("%s needs a value", key);
    if (!strcmp(key, "--socket")) cfg->socket = value;
    else if (!strcmp(key, "--spawn")) cfg->spawn_helper = value;
    else if (!strcmp(key, "--seccomp")) cfg->seccomp = value;
    else if (!strcmp(key, "--calls-socket")) cfg->calls_socket = value;
    else if (!strcmp(key, "--bridge")) {
      const char *err = bridge_arg(cfg, value);
      if (err) usage_die("%s", err);
    }
    else if (!strcmp(key, "--cgroup-version")) cfg->version = !strcmp(value, "2") ? 2 : 1;
    else if (!strcmp(key, "--cgroup")) {
      const char *eq = strchr(value, '=');
      if (!eq || eq == value) usage_die("--cgroup wants NAME=DIR, got %s", value);
      if (cfg->nroots == MAX_CGROUPS) usage_die("too many --cgroup options (%s)", value);
      cfg->roots[cfg->nroots].name = strndup(value, (size_t)(eq - value));
      cfg->roots[cfg->nroots].dir = strdup(eq + 1);
      cfg->nroots++;
    } else if (!strcmp(key, "--ready-fd")) cfg->ready_fd = atoi(value);
    else if (!strcmp(key, "--orphan-after-s")) {
      char *end = NULL;
      long n = strtol(value, &end, 10);
      if (!end || *end || n < 0 || n > 86400L * 365) usage_die("--orphan-after-s wants 0..31536000, got %s", value);
      cfg->orphan_after_s = (int)n;
    }
    else usage_die("unknown argument %s", key);
  }
  if (!cfg->socket || !cfg->spawn_helper || !cfg->seccomp)
    usage_die("%s", "--socket, --spawn and --seccomp are required");
}

/* ---- ping --------------------------------------------------------------------------- */

static long status_kb(const char *text, const char *field) {
  const char *p = strstr(text, field);
  while (p && p != text && p[-1] != '\n') p = strstr(p + 1, field);
  if (!p) return 0;
  return strtol(p + strlen(field), NULL, 10);
}

void ping_answer(struct conn *c) {
  struct boxd *bd = c->bd;
  char text[8192];
  long rss = 0, anon = 0, pss = 0;
  if (read_small("/proc/self/status", text, sizeof text) > 0) {
    rss = status_kb(text, "VmRSS:") * 1024;
    anon = status_kb(text, "RssAnon:") * 1024;
  }
  if (read_small("/proc/self/smaps_rollup", text, sizeof text) > 0) pss = status_kb(text, "Pss:") * 1024;
  long processes = 0, gen = 0;
  struct names names = {0};
  cg_names(&bd->cfg, &names);
  for (size_t i = 0; i < names.n; i++) {
    const char *name = names.v[i];
    if (bd->prepared && !strcmp(name, bd->prepared->name)) continue;
    if (bd->walled && !strcmp(name, bd->walled->name)) continue;
    long k = (long)cg_procs(&bd->cfg, name, NULL);
    processes += k;
    if (names_has(&bd->generations, name)) {
      gen += k;
      if (k == 0 && !exec_is_active(bd, name)) names_drop(&bd->generations, name);
    }
  }
  names_clear(&names);
  struct buf j = {0};
  buf_printf(&j,
             "{\"type\":\"pong\",\"pid\":%d,\"rssBytes\":%ld,\"anonBytes\":%ld,\"pssBytes\":%ld,\"uptimeMs\":%lld,"
             "\"execs\":%d,\"processes\":%ld,\"generationProcesses\":%ld,\"readyCgroup\":\"%s\"}",
             getpid(), rss, anon, pss, (long long)(now_ms() - bd->started_at), bd->active_count, processes, gen,
             bd->walled ? bd->walled->name : "");
  conn_send_json(c, &j);
  conn_end(c);
}

/* ---- the loop ----------------------------------------------------------------------- */

/* Removes the empty cgroups of commands no longer running (background processes keep
   theirs until they end). */
static void sweep(struct boxd *bd) {
  struct names names = {0};
  cg_names(&bd->cfg, &names);
  for (size_t i = 0; i < names.n; i++) {
    const char *name = names.v[i];
    if (!exec_is_active(bd, name) && !pty_is_active(bd, name) &&
        !(bd->prepared && !strcmp(bd->prepared->name, name)) && !(bd->walled && !strcmp(bd->walled->name, name)))
      cg_remove_later(&bd->cfg, name);
  }
  names_clear(&names);
}

static void on_signal(struct boxd *bd) {
  struct signalfd_siginfo si;
  while (read(bd->signal_fd, &si, sizeof si) == (ssize_t)sizeof si) {
    if (si.ssi_signo == SIGTERM) exit(0);
  }
  helpers_reap(bd);
}


static void dispatch(struct boxd *bd, struct watch *w, uint32_t ev) {
  switch (w->kind) {
    case W_LISTEN:
      conn_accept_all(bd);
      break;
    case W_SIGNAL:
      on_signal(bd);
      break;
    case W_CONN:
      conn_on_event(w->owner, ev);
      break;
    case W_TARGET:
      fwd_on_event(w->owner, ev);
      break;
    case W_OUT:
    case W_ERR:
    case W_IN:
    case W_SPEC:
      exec_on_watch(w->owner, w->kind);
      break;
    case W_CALLS_LISTEN:
    case W_CALL:
      calls_on_watch(bd, w, ev);
      break;
    case W_BRIDGE_LISTEN:
      bridges_on_watch(bd, w);
      break;
    case W_PTY:
    case W_PTY_SPEC:
      pty_on_watch(w->owner, w->kind, ev);
      break;
  }
}

/* A box never outlives its server: boxd ends (and with it the box: the kernel ends the
   pid namespace) when its socket is gone or replaced (the state folder was removed on
   the host, which detaches the bind at /run/boxd), or when no client has connected for
   orphan_after_s and no command is running. */
/* Ends every agent process (each command's cgroup, SIGKILL rounds for up to 10 s), then
   boxd: bwrap's pid 1 then has no child left and exits, and the box is gone. */
static void end_box(struct boxd *bd) __attribute__((noreturn));
static void end_box(struct boxd *bd) {
  double deadline = now_ms() + 10000;
  for (;;) {
    size_t left = 0;
    struct names names = {0};
    cg_names(&bd->cfg, &names);
    for (size_t i = 0; i < names.n; i++) {
      pid_t *pids = NULL;
      size_t n = cg_procs(&bd->cfg, names.v[i], &pids);
      for (size_t k = 0; k < n; k++)
        if (pids[k] > 0) kill(pids[k], SIGKILL);
      left += n;
      free(pids);
    }
    names_clear(&names);
    if (left == 0 || now_ms() > deadline) break;
    helpers_reap(bd);
    usleep(5000);
  }
  /* whatever of the box the cgroups did not show ends too: with its state folder removed on
     the host, the folder bound at /run/warren (and the cgroups bound in it) may be gone from
     the box as well, and every process boxd may signal in its pid namespace is the box's */
  kill(-1, SIGKILL);
  exit(0);
}

/* Idle (no connection, command or terminal): the pages the read scratch and the heap took
   for earlier output go back to the kernel, so a box at rest costs what a fresh one does. */
static void release_idle_memory(struct boxd *bd) {
  if (bd->conns || bd->active_count > 0 || bd->ptys) {
    bd->memory_released = 0;
    return;
  }
  if (bd->memory_released) return;
  bd->memory_released = 1;
  madvise(bd->chunk, READ_CHUNK, MADV_DONTNEED);
  malloc_trim(0);
}

static void watch_owner(struct boxd *bd, double now) {
  struct stat st;
  if (stat(bd->cfg.socket, &st) != 0 || (unsigned long)st.st_ino != bd->socket_ino) {
    logf_("the socket %s is gone (its state folder was removed): stopping the box", bd->cfg.socket);
    end_box(bd);
  }
  if (bd->conns || bd->active_count > 0) bd->last_contact = now;
  if (bd->cfg.orphan_after_s > 0 && now - bd->last_contact > bd->cfg.orphan_after_s * 1000.0) {
    logf_("no server contact for %d s and no command running: stopping the box", bd->cfg.orphan_after_s);
    end_box(bd);
  }
}

/* What is due after a batch of events: timers, the sweep, a new ready helper, frees,
   cgroup removals. */
static void after_events(struct boxd *bd) {
  double now = now_ms();
  exec_run_timers(bd, now);
  bridges_expire(bd, now);
  pty_run_timers(bd, now);
  if (bd->listen_paused_until > 0 && bd->listen_paused_until <= now) {
    bd->listen_paused_until = 0;
    ep_set(bd, bd->listen_fd, &bd->listen_w, EPOLLIN, 0);
  }
  if (now >= bd->next_sweep) {
    bd->next_sweep = now + SWEEP_MS;
    sweep(bd);
  }
  if (now >= bd->next_watch) {
    bd->next_watch = now + WATCH_MS;
    watch_owner(bd, now);
    release_idle_memory(bd);
  }
  if (bd->want_prepare) {
    bd->want_prepare = 0;
    helper_prepare(bd);
  }
  bury_flush(bd);
  for (size_t i = 0; i < bd->removals.n; i++) cg_remove_later(&bd->cfg, bd->removals.v[i]);
  names_clear(&bd->removals);
}

static int run(struct boxd *bd) {
  struct epoll_event evs[64];
  for (;;) {
    double now = now_ms(), next = bd->next_sweep;
    if (bd->next_watch < next) next = bd->next_watch;
    if (bd->listen_paused_until > 0 && bd->listen_paused_until < next) next = bd->listen_paused_until;
    next = exec_next_timer(bd, next);
    next = pty_next_timer(bd, next);
    int wait = bd->want_prepare || bd->removals.n ? 0 : next <= now ? 0 : (int)(next - now + 0.999);
    int n = epoll_wait(bd->ep, evs, 64, wait);
    if (n < 0 && errno != EINTR) {
      logf_("epoll_wait: %s", strerror(errno));
      return 1;
    }
    for (int i = 0; i < n; i++) dispatch(bd, evs[i].data.ptr, evs[i].events);
    after_events(bd);
  }
}

int main(int argc, char **argv) {
  /* static: zeroed by the loader, so its pages cost nothing until used */
  static struct boxd bd;
  bd.cfg.version = 1;
  bd.cfg.ready_fd = -1;
  bd.listen_w = (struct watch){W_LISTEN, NULL};
  bd.signal_w = (struct watch){W_SIGNAL, NULL};
  umask(022);
  parse_args(&bd.cfg, argc, argv);
  bd.chunk = mmap(NULL, READ_CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (bd.chunk == MAP_FAILED) {
    logf_("mmap: %s", strerror(errno));
    return 1;
  }
  bd.started_at = now_ms();
  /* every signal's disposition is the default but SIGPIPE's, whatever boxd's parent ignored:
     a command's helper then needs only SIGPIPE put back (exec.c, spawn_helper_exec) */
  for (int sig = 1; sig < NSIG; sig++)
    if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
  signal(SIGPIPE, SIG_IGN);
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGCHLD);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, NULL);
  bd.signal_fd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  bd.ep = epoll_create1(EPOLL_CLOEXEC);
  if (bd.signal_fd < 0 || bd.ep < 0) {
    logf_("signalfd/epoll: %s", strerror(errno));
    return 1;
  }
  if (bd.cfg.ready_fd >= 0) fcntl(bd.cfg.ready_fd, F_SETFD, FD_CLOEXEC);
  bd.listen_fd = listen_unix(bd.cfg.socket, 0600, 511);
  if (bd.listen_fd < 0) {
    logf_("listen on %s: %s", bd.cfg.socket, strerror(errno));
    return 1;
  }
  struct stat sock_st;
  if (stat(bd.cfg.socket, &sock_st) != 0) {
    logf_("stat %s: %s", bd.cfg.socket, strerror(errno));
    return 1;
  }
  bd.socket_ino = (unsigned long)sock_st.st_ino;
  if (calls_listen(&bd) != 0) {
    logf_("listen on %s: %s", bd.cfg.calls_socket, strerror(errno));
    return 1;
  }
  int bridge_port = 0;
  if (bridges_listen(&bd, &bridge_port) != 0) {
    logf_("listen on 127.0.0.1:%d: %s", bridge_port, strerror(errno));
    return 1;
  }
  ep_set(&bd, bd.signal_fd, &bd.signal_w, EPOLLIN, 1);
  ep_set(&bd, bd.listen_fd, &bd.listen_w, EPOLLIN, 1);
  /* the first ready helper starts before boxd says it is ready: its cgroup migration
     then overlaps the server's ping and first command */
  helper_prepare(&bd);
  if (bd.cfg.ready_fd >= 0) {
    if (write(bd.cfg.ready_fd, "ready\n", 6) != 6) logf_("ready fd: %s", strerror(errno));
    close(bd.cfg.ready_fd);
  }
  logf_("listening on %s", bd.cfg.socket);
  bd.next_sweep = now_ms() + SWEEP_MS;
  bd.last_contact = now_ms();
  bd.next_watch = bd.last_contact + WATCH_MS;
  return run(&bd);
}

#ifdef BOXD_SANITIZE
/* The sanitizer build (dist/native/boxd-asan): bwrap gives boxd no environment of the
   caller's, so the runtimes' options are built in. Any report ends boxd (the box's tests
   then fail, and find the report in box.log). Leaks are checked when boxd exits, on
   SIGTERM (the box tests send it before removing a box; a stopped box's boxd is
   SIGKILLed and checks nothing). */
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
  return "abort_on_error=1:halt_on_error=1:detect_leaks=1:quarantine_size_mb=32:detect_stack_use_after_return=1";
}
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void) { return "halt_on_error=1:abort_on_error=1:print_stacktrace=1"; }
#endif
