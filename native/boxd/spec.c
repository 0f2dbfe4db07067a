/* An exec request: see spec.h. */
#include "spec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int fail(struct perr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct perr *e, const char *fmt, ...) {
  char m[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m, sizeof m, fmt, ap);
  va_end(ap);
  buf_puts(&e->msg, m);
  return -1;
}

int spec_is_int(const struct jv *x, double min, double max) {
  /* the range first: only then does the cast mean anything */
  return x && x->t == J_NUM && x->n >= min && x->n <= max && x->n == (double)(long long)x->n;
}

int spec_int(const struct jv *x, const char *what, double min, double max, long *out, struct perr *e) {
  if (!spec_is_int(x, min, max)) return fail(e, "%s must be an integer from %.0f to %.0f", what, min, max);
  *out = (long)x->n;
  return 0;
}

/* A string without NUL; what is a prefix and a suffix (the suffix may hold any bytes,
   e.g. an env name). */
static int string(const struct jv *x, const char *what, const char *suffix, size_t suflen, struct perr *e) {
  if (x && x->t == J_STR && !memchr(x->s, 0, x->len)) return 0;
  buf_puts(&e->msg, what);
  buf_put(&e->msg, suffix, suflen);
  buf_puts(&e->msg, " must be a string without NUL");
  return -1;
}

static int abs_path(const struct jv *x, const char *what, struct perr *e) {
  if (string(x, what, "", 0, e)) return -1;
  int bad = x->len == 0 || x->s[0] != '/';
  for (size_t i = 0; !bad && i < x->len; i++) {
    /* a ".." component */
    if ((i == 0 || x->s[i - 1] == '/') && i + 1 < x->len && x->s[i] == '.' && x->s[i + 1] == '.' &&
        (i + 2 == x->len || x->s[i + 2] == '/'))
      bad = 1;
  }
  if (bad) return fail(e, "%s must be an absolute path without ..", what);
  return 0;
}

/* A folder relative to a home: plain names joined by "/" (no "", "." or ".." component). */
static int rel_path(const struct jv *x, const char *what, struct perr *e) {
  if (string(x, what, "", 0, e)) return -1;
  int bad = x->len == 0 || x->len > 1024;
  size_t start = 0;
  for (size_t i = 0; !bad && i <= x->len; i++) {
    if (i < x->len && x->s[i] != '/') continue;
    size_t n = i - start;
    const char *c = x->s + start;
    if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.')) bad = 1;
    start = i + 1;
  }
  if (bad) return fail(e, "%s must be a folder relative to the home, plain names joined by /", what);
  return 0;
}

int spec_parse(const struct jv *x, struct spec *s, struct perr *e) {
  memset(s, 0, sizeof *s);
  if (!x || x->t != J_OBJ) return fail(e, "exec must be an object");
  const struct jv *argv = json_get(x, "argv");
  if (!argv || argv->t != J_ARR || argv->count == 0) return fail(e, "exec.argv must be a non-empty array");
  for (size_t i = 0; i < argv->count; i++) {
    char what[64];
    snprintf(what, sizeof what, "exec.argv[%zu]", i);
    if (string(argv->items[i], what, "", 0, e)) return -1;
  }
  s->argv = argv;
  const struct jv *env = json_get(x, "env");
  if (!env || env->t != J_OBJ) return fail(e, "exec.env must be an object");
  for (size_t i = 0; i < env->count; i++) {
    const char *k = env->keys[i];
    size_t kl = env->klens[i];
    if (kl == 0 || memchr(k, '=', kl) || memchr(k, 0, kl)) {
      buf_puts(&e->msg, "exec.env has a bad name ");
      json_put_string(&e->msg, k, kl);
      return -1;
    }
    if (string(env->items[i], "exec.env.", k, kl, e)) return -1;
  }
  s->env = env;
  const struct jv *groups = json_get(x, "groups");
  if (groups && (groups->t != J_ARR || groups->count > 32))
    return fail(e, "exec.groups must be an array of at most 32 ids");
  const struct jv *cwd = json_get(x, "cwd");
  if (abs_path(cwd, "exec.cwd", e)) return -1;
  s->cwd = cwd;
  if (spec_int(json_get(x, "uid"), "exec.uid", MIN_AGENT_ID, MAX_ID, &s->uid, e)) return -1;
  if (spec_int(json_get(x, "gid"), "exec.gid", MIN_AGENT_ID, MAX_ID, &s->gid, e)) return -1;
  for (size_t i = 0; groups && i < groups->count; i++) {
    char what[64];
    snprintf(what, sizeof what, "exec.groups[%zu]", i);
    if (spec_int(groups->items[i], what, MIN_AGENT_ID, MAX_ID, &s->groups[i], e)) return -1;
    s->ngroups = i + 1;
  }
  const struct jv *timeout = json_get(x, "timeoutMs");
  if (timeout && timeout->t != J_NULL &&
      spec_int(timeout, "exec.timeoutMs", 0, 7.0 * 24 * 3600 * 1000, &s->timeout_ms, e))
    return -1;
  const struct jv *agent = json_get(x, "agentDir");
  if (agent) {
    if (abs_path(agent, "exec.agentDir", e)) return -1;
    s->agent_dir = agent;
  }
  const struct jv *fence = json_get(x, "fence");
  if (fence) {
    if (fence->t != J_OBJ) return fail(e, "exec.fence must be an object");
    const struct jv *home = json_get(fence, "home");
    if (abs_path(home, "exec.fence.home", e)) return -1;
    const char *names[2] = {"keep", "hide"};
    const struct jv *lists[2];
    for (int k = 0; k < 2; k++) {
      const struct jv *list = lists[k] = json_get(fence, names[k]);
      if (!list) continue;
      if (list->t != J_ARR || list->count > MAX_FENCE_KEEP)
        return fail(e, "exec.fence.%s must be an array of at most %d folders", names[k], MAX_FENCE_KEEP);
      for (size_t i = 0; i < list->count; i++) {
        char what[64];
        snprintf(what, sizeof what, "exec.fence.%s[%zu]", names[k], i);
        if (rel_path(list->items[i], what, e)) return -1;
      }
    }
    const struct jv *place = json_get(fence, "place");
    if (place) {
      if (place->t != J_OBJ) return fail(e, "exec.fence.place must be an object");
      s->place_from = json_get(place, "from");
      s->place_at = json_get(place, "at");
      if (rel_path(s->place_from, "exec.fence.place.from", e) || rel_path(s->place_at, "exec.fence.place.at", e))
        return -1;
    }
    const struct jv *keep = lists[0];
    s->fence_hide = lists[1];
    s->fence_home = home;
    s->fence_keep = keep;
  }
  const struct jv *workspace = json_get(x, "workspaceDir");
  if (workspace) {
    if (abs_path(workspace, "exec.workspaceDir", e)) return -1;
    s->workspace_dir = workspace;
  }
  const struct jv *self = json_get(x, "selfDir");
  if (self) {
    if (abs_path(self, "exec.selfDir", e)) return -1;
    s->self_dir = self;
  }
  const struct jv *files = json_get(x, "files");
  if (files) {
    if (files->t != J_OBJ) return fail(e, "exec.files must be an object");
    const char *names[2] = {"read", "write"};
    for (int k = 0; k < 2; k++) {
      const struct jv *list = json_get(files, names[k]);
      if (!list || list->t != J_ARR || list->count > MAX_FILE_RULES)
        return fail(e, "exec.files.%s must be an array of at most %d paths", names[k], MAX_FILE_RULES);
      for (size_t i = 0; i < list->count; i++) {
        char what[64];
        snprintf(what, sizeof what, "exec.files.%s[%zu]", names[k], i);
        if (abs_path(list->items[i], what, e)) return -1;
      }
      if (k == 0) s->fs_read = list;
      else s->fs_write = list;
    }
  }
  const struct jv *ports = json_get(x, "bindPorts");
  if (ports) {
    if (ports->t != J_OBJ) return fail(e, "exec.bindPorts must be an object");
    if (spec_int(json_get(ports, "first"), "exec.bindPorts.first", 1, 65535, &s->port_first, e)) return -1;
    long last_max = s->port_first + 999 > 65535 ? 65535 : s->port_first + 999;
    if (spec_int(json_get(ports, "last"), "exec.bindPorts.last", (double)s->port_first, (double)last_max,
                 &s->port_last, e))
      return -1;
  }
  const struct jv *net = json_get(x, "network");
  if (net) {
    if (net->t != J_OBJ) return fail(e, "exec.network must be an object");
    const struct jv *list = json_get(net, "connect");
    if (!list || list->t != J_ARR || list->count < 1 || list->count > 8)
      return fail(e, "exec.network.connect must be an array of 1 to 8 port ranges");
    for (size_t i = 0; i < list->count; i++) {
      const struct jv *r = list->items[i];
      char what[64];
      if (r->t != J_OBJ) return fail(e, "exec.network.connect[%zu] must be an object", i);
      snprintf(what, sizeof what, "exec.network.connect[%zu].first", i);
      if (spec_int(json_get(r, "first"), what, 1, 65535, &s->connect_first[i], e)) return -1;
      long last_max = s->connect_first[i] + 999 > 65535 ? 65535 : s->connect_first[i] + 999;
      snprintf(what, sizeof what, "exec.network.connect[%zu].last", i);
      if (spec_int(json_get(r, "last"), what, (double)s->connect_first[i], (double)last_max, &s->connect_last[i], e))
        return -1;
    }
    s->nconnect = list->count;
    s->walled = 1;
  }
  const struct jv *gen = json_get(x, "generation");
  if (gen) {
    if (gen->t != J_BOOL) return fail(e, "exec.generation must be a boolean");
    s->generation = gen->b;
  }
  const struct jv *trace = json_get(x, "trace");
  if (trace) {
    if (trace->t != J_BOOL) return fail(e, "exec.trace must be a boolean");
    s->trace = trace->b;
  }
  const struct jv *limits = json_get(x, "limits");
  if (limits) {
    if (limits->t != J_OBJ) return fail(e, "exec.limits must be an object");
    const struct jv *m = json_get(limits, "memoryMib"), *p = json_get(limits, "pids");
    if (m) {
      if (spec_int(m, "exec.limits.memoryMib", 4, 1 << 24, &s->mem_mib, e)) return -1;
      s->has_mem = 1;
    }
    if (p) {
      if (spec_int(p, "exec.limits.pids", 1, 1 << 22, &s->pids, e)) return -1;
      s->has_pids = 1;
    }
  }
  return 0;
}

/* One option: its bytes and the NUL that ends it. */
static int opt(struct buf *o, const char *s, size_t len) { return buf_put(o, s, len) || buf_put(o, "", 1); }
static int opts(struct buf *o, const char *s) { return opt(o, s, strlen(s)); }
static int optv(struct buf *o, const struct jv *v) { return opt(o, v->s, v->len); }

/* The options of the command's walls: who it runs as, its filter, its mounts (/agent, the
   fence), its file and port rules. */
static int walls_options(const struct spec *s, const char *seccomp, struct buf *o) {
  char num[64];
  int bad = 0;
  snprintf(num, sizeof num, "%ld", s->uid);
  bad |= opts(o, "--uid") || opts(o, num);
  snprintf(num, sizeof num, "%ld", s->gid);
  bad |= opts(o, "--gid") || opts(o, num);
  bad |= opts(o, "--seccomp") || opts(o, seccomp);
  if (s->agent_dir) bad |= opts(o, "--agent-dir") || optv(o, s->agent_dir);
  if (s->ngroups) {
    struct buf g = {0};
    for (size_t i = 0; i < s->ngroups; i++) bad |= buf_printf(&g, "%s%ld", i ? "," : "", s->groups[i]);
    bad |= opts(o, "--groups") || opt(o, g.p, g.len);
    buf_free(&g);
  }
  if (s->fence_home) {
    bad |= opts(o, "--fence-home") || optv(o, s->fence_home);
    if (s->fence_keep) {
      bad |= opts(o, "--fence-cover") || opts(o, "yes");
      for (size_t i = 0; i < s->fence_keep->count; i++) bad |= opts(o, "--keep") || optv(o, s->fence_keep->items[i]);
    }
    if (s->place_from)
      bad |= opts(o, "--place-from") || optv(o, s->place_from) || opts(o, "--place-at") || optv(o, s->place_at);
    for (size_t i = 0; s->fence_hide && i < s->fence_hide->count; i++)
      bad |= opts(o, "--hide") || optv(o, s->fence_hide->items[i]);
  }
  if (s->workspace_dir) bad |= opts(o, "--workspace-dir") || optv(o, s->workspace_dir);
  if (s->self_dir) bad |= opts(o, "--self-dir") || optv(o, s->self_dir);
  if (s->port_first > 0) {
    snprintf(num, sizeof num, "%ld-%ld", s->port_first, s->port_last);
    bad |= opts(o, "--bind-ports") || opts(o, num);
  }
  for (size_t i = 0; i < s->nconnect; i++) {
    snprintf(num, sizeof num, "%ld-%ld", s->connect_first[i], s->connect_last[i]);
    bad |= opts(o, "--connect-ports") || opts(o, num);
  }
  if (s->walled) bad |= opts(o, "--scope") || opts(o, "abstract-unix");
  if (s->fs_read) {
    bad |= opts(o, "--files") || opts(o, "restrict");
    for (size_t i = 0; i < s->fs_read->count; i++) bad |= opts(o, "--read") || optv(o, s->fs_read->items[i]);
    for (size_t i = 0; i < s->fs_write->count; i++) bad |= opts(o, "--write") || optv(o, s->fs_write->items[i]);
  }
  return bad;
}

int spec_walls(const struct spec *s, const char *seccomp, struct buf *o) {
  /* the fence binds the home's folders as they are when it is made: made ahead, it could
     hold a folder that the command before replaced */
  if (s->fence_home) return 1;
  return opts(o, "--walls") || walls_options(s, seccomp, o) || opts(o, "--end-walls") ? -1 : 0;
}

int spec_command(const struct spec *s, struct buf *o) {
  int bad = opts(o, "--cwd") || optv(o, s->cwd);
  if (s->trace) bad |= opts(o, "--trace-fd") || opts(o, "4");
  for (size_t i = 0; i < s->env->count; i++) {
    bad |= opts(o, "--env") || buf_put(o, s->env->keys[i], s->env->klens[i]) || buf_put(o, "=", 1) ||
           optv(o, s->env->items[i]);
  }
  bad |= opts(o, "--");
  for (size_t i = 0; i < s->argv->count; i++) bad |= optv(o, s->argv->items[i]);
  return bad ? -1 : 0;
}

int spec_options(const struct spec *s, const char *seccomp, struct buf *o) {
  return walls_options(s, seccomp, o) || spec_command(s, o) ? -1 : 0;
}
