/* One command and the helpers that run commands: see exec.h (the state table). */
#include "exec.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#include "cgroup.h"
#include "conn.h"
#include "pty.h"

/* What the command wrote before it ended is taken up to this much when it is answered. */
#define DRAIN_LIMIT (4 * 1024 * 1024)
#define KILL_LIMIT_MS 10000
#define KILL_ROUND_MS 1
#define GRACE_MS 100

/* ---- the state table ---------------------------------------------------------------- */

static const struct transition {
  enum exec_state from;
  enum exec_event on;
  enum exec_state to;
} transitions[] = {
    {X_RUNNING, EV_CANCEL, X_KILLING},
    {X_RUNNING, EV_TIMEOUT, X_KILLING},
    {X_RUNNING, EV_EXIT, X_DRAINING},
    {X_KILLING, EV_CANCEL, X_KILLING},
    {X_KILLING, EV_EXIT, X_KILLING_EXITED},
    {X_KILLING, EV_KILL_DONE, X_KILLED},
    {X_KILLING_EXITED, EV_CANCEL, X_KILLING_EXITED},
    {X_KILLING_EXITED, EV_KILL_DONE, X_DRAINING},
    {X_KILLED, EV_CANCEL, X_KILLED},
    {X_KILLED, EV_EXIT, X_DRAINING},
    {X_DRAINING, EV_CANCEL, X_DRAINING},
    {X_DRAINING, EV_OUTPUT_DONE, X_ANSWERED},
};

static const char *const state_names[] = {
    [X_RUNNING] = "RUNNING", [X_KILLING] = "KILLING", [X_KILLING_EXITED] = "KILLING_EXITED",
    [X_KILLED] = "KILLED",   [X_DRAINING] = "DRAINING", [X_ANSWERED] = "ANSWERED",
};
static const char *const event_names[] = {
    [EV_CANCEL] = "CANCEL",       [EV_TIMEOUT] = "TIMEOUT",         [EV_EXIT] = "EXIT",
    [EV_KILL_DONE] = "KILL_DONE", [EV_OUTPUT_DONE] = "OUTPUT_DONE",
};

static void enter_draining(struct exec *e);
static void answer(struct exec *e);
static void close_stdin(struct exec *e);

void exec_event(struct exec *e, enum exec_event ev) {
  const struct transition *t = NULL;
  for (size_t i = 0; i < sizeof transitions / sizeof transitions[0]; i++)
    if (transitions[i].from == e->state && transitions[i].on == ev) {
      t = &transitions[i];
      break;
    }
  if (!t) {
    logf_("exec %s: event %s in state %s has no transition", e->name, event_names[ev], state_names[e->state]);
    abort();
  }
  if (t->to == e->state) return;
  e->state = t->to;
  /* what happens on entering the new state */
  switch (t->to) {
    case X_KILLING:
      e->kill = ev == EV_TIMEOUT ? KILL_TIMEOUT : KILL_CANCEL;
      e->kill_deadline = now_ms() + KILL_LIMIT_MS;
      e->timer_at = now_ms(); /* the first round at once, in the loop */
      break;
    case X_KILLING_EXITED:
      break; /* the rounds go on */
    case X_KILLED:
      e->timer_at = 0;
      break;
    case X_DRAINING:
      enter_draining(e);
      break;
    case X_ANSWERED:
      e->timer_at = 0;
      answer(e);
      break;
    case X_RUNNING:
      break; /* never entered: the state a command starts in */
  }
}

/* ---- helpers ------------------------------------------------------------------------ */

static void helper_close(struct helper *h) {
  close_fd(h->bd, &h->in, 1);
  close_fd(h->bd, &h->out, 1);
  close_fd(h->bd, &h->err, 1);
  close_fd(h->bd, &h->spec, 1);
  if (h->trace >= 0) close(h->trace), h->trace = -1;
  buf_free(&h->walls);
  buf_free(&h->filter);
}

/* The whole of a small file (the seccomp program); -1 when it cannot be read. */
static int read_whole(const char *path, struct buf *out) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char chunk[4096];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || buf_put(out, chunk, (size_t)n) || out->len > (1u << 20)) {
      close(fd);
      return n == 0 ? 0 : -1;
    }
  }
}

/* A name for a new helper's cgroup: x<n>-<ms since the epoch in base 36>. */
static void helper_name(struct boxd *bd, char *out, size_t cap) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  unsigned long long ms = (unsigned long long)ts.tv_sec * 1000ULL + (unsigned long long)ts.tv_nsec / 1000000ULL;
  char b36[24];
  int k = 0;
  do {
    b36[k++] = "0123456789abcdefghijklmnopqrstuvwxyz"[ms % 36];
    ms /= 36;
  } while (ms);
  int at = snprintf(out, cap, "x%lu-", ++bd->counter);
  while (k > 0 && at < (int)cap - 1) out[at++] = b36[--k];
  out[at] = '\0';
}

void helper_become(int keep, int argc, const char **argv) {
  /* what an execve would have closed (boxd's fds are close-on-exec): its socket, its
     clients, other commands' pipes; a helper waiting for its command holds none of them */
  if (syscall(SYS_close_range, (unsigned)keep, ~0U, 0) != 0)
    for (int fd = keep; fd < 65536; fd++) close(fd);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  for (int sig = 1; sig < NSIG; sig++) signal(sig, SIG_DFL);
  prctl(PR_SET_NAME, "boxd-spawn", 0, 0, 0);
  static char *no_env[] = {NULL};
  environ = no_env;
  _exit(boxd_spawn_main(argc, (char **)argv));
}

/* The helper as a program of its own (native/boxd-spawn.c, linked static): posix_spawn
   shares boxd's memory until the exec (vfork), so neither boxd nor the helper copies a page
   or takes a copy-on-write fault, and the command's exec later tears down only the helper's
   small static image. On a guest whose page tables are the hypervisor's (faults and TLB
   shootdowns are hypercalls) this took boxd's own CPU per command from ~3.6 to ~1.5 ms
   (docs/operations.md). fds[0..4] become the helper's 0..4; nothing else of boxd's goes with
   it (its fds are close-on-exec), and its signal mask and dispositions are the defaults. */
static pid_t spawn_helper_exec(const char *path, const char **argv, const int fds[5], struct buf *err) {
  int high[5] = {-1, -1, -1, -1, -1};
  pid_t pid = -1;
  posix_spawn_file_actions_t fa;
  posix_spawnattr_t at;
  posix_spawn_file_actions_init(&fa);
  posix_spawnattr_init(&at);
  /* boxd's only disposition that is not the default is SIGPIPE's (main.c); the handlers
     an exec resets anyway, so one reset in the child instead of one per signal */
  sigset_t none, pipe_only;
  sigemptyset(&none);
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setsigdefault(&at, &pipe_only);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  int rc = 0;
  /* an end among 0..4 moves above 9 first, so that no dup2 clobbers another end (the others
     are used where they are: the child's dup2 of each only lands on 0..4) */
  for (int i = 0; i < 5 && rc == 0; i++)
    if (fds[i] < 5 && (high[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 10)) < 0) rc = errno;
  for (int i = 0; i < 5 && rc == 0; i++)
    rc = posix_spawn_file_actions_adddup2(&fa, high[i] >= 0 ? high[i] : fds[i], i);
  static char *no_env[] = {NULL};
  if (rc == 0) rc = posix_spawn(&pid, path, &fa, &at, (char *const *)argv, no_env);
  if (rc != 0) buf_printf(err, "spawn %s: %s", path, strerror(rc)), pid = -1;
  for (int i = 0; i < 5; i++)
    if (high[i] >= 0) close(high[i]);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  return pid;
}

/* Starts a helper in a new command cgroup; it waits on fd 3 for its command. */
static struct helper *helper_spawn(struct boxd *bd, struct buf *err) {
  const struct config *cfg = &bd->cfg;
  struct helper *h = xcalloc(1, sizeof *h);
  h->bd = bd;
  h->in = h->out = h->err = h->spec = h->trace = -1;
  helper_name(bd, h->name, sizeof h->name);
  if (cg_create(cfg, h->name, err)) {
    free(h);
    return NULL;
  }
  char dirs[MAX_CGROUPS][4096];
  for (int r = 0; r < cfg->nroots; r++) cg_path(cfg, r, h->name, NULL, dirs[r], sizeof dirs[r]);
  int p_in[2] = {-1, -1}, p_out[2] = {-1, -1}, p_err[2] = {-1, -1}, p_spec[2] = {-1, -1}, p_tr[2] = {-1, -1};
  if (pipe2(p_in, O_CLOEXEC) || pipe2(p_out, O_CLOEXEC) || pipe2(p_err, O_CLOEXEC) || pipe2(p_spec, O_CLOEXEC) ||
      pipe2(p_tr, O_CLOEXEC | O_NONBLOCK)) {
    buf_printf(err, "pipe: %s", strerror(errno));
    goto fail;
  }
  const char *argv[2 * MAX_CGROUPS + 4];
  int n = 0;
  argv[n++] = "boxd-spawn";
  for (int r = 0; r < cfg->nroots; r++) argv[n++] = "--cgroup", argv[n++] = dirs[r];
  argv[n++] = "--spec-fd";
  argv[n++] = "3";
  argv[n] = NULL;
  pid_t pid = spawn_helper_exec(cfg->spawn_helper, argv, (int[5]){p_in[0], p_out[1], p_err[1], p_spec[0], p_tr[1]}, err);
  if (pid < 0) goto fail;
  close(p_in[0]), close(p_out[1]), close(p_err[1]), close(p_spec[0]), close(p_tr[1]);
  h->trace = p_tr[0];
  h->in = p_in[1], h->out = p_out[0], h->err = p_err[0], h->spec = p_spec[1];
  set_nonblock(h->in), set_nonblock(h->out), set_nonblock(h->err), set_nonblock(h->spec);
  h->pid = pid;
  h->next = bd->helpers;
  bd->helpers = h;
  return h;
fail:
  for (int i = 0; i < 2; i++) {
    if (p_in[i] >= 0) close(p_in[i]);
    if (p_out[i] >= 0) close(p_out[i]);
    if (p_err[i] >= 0) close(p_err[i]);
    if (p_spec[i] >= 0) close(p_spec[i]);
    if (p_tr[i] >= 0) close(p_tr[i]);
  }
  cg_remove(cfg, h->name);
  free(h);
  return NULL;
}

/* A helper no command will take: its pipes closed unwatched, it reads the end of its
   options and exits; the reaper frees it and the sweep removes its cgroup. */
static void helper_let_go(struct helper *h) {
  close_fd(h->bd, &h->spec, 0);
  close_fd(h->bd, &h->in, 0);
  close_fd(h->bd, &h->out, 0);
  close_fd(h->bd, &h->err, 0);
}

void helper_prepare(struct boxd *bd) {
  struct buf err = {0};
  if (!bd->prepared) {
    bd->prepared = helper_spawn(bd, &err);
    if (!bd->prepared) logf_("cannot prepare a helper: %s", err.p ? err.p : "?");
  }
  if (!bd->walled && bd->walls_next.len) {
    /* the walls of the last commands, applied while it waits; a fresh pipe holds them whole
       (a write that does not fit, or a filter that cannot be read, and it is let go) */
    struct helper *h = helper_spawn(bd, &err);
    if (!h) logf_("cannot prepare a helper: %s", err.p ? err.p : "?");
    else if (read_whole(bd->cfg.seccomp, &h->filter) ||
             write(h->spec, bd->walls_next.p, bd->walls_next.len) != (ssize_t)bd->walls_next.len ||
             buf_put(&h->walls, bd->walls_next.p, bd->walls_next.len))
      helper_let_go(h);
    else bd->walled = h;
  }
  buf_free(&err);
}

static void helper_unlink(struct helper *h) {
  for (struct helper **p = &h->bd->helpers; *p; p = &(*p)->next)
    if (*p == h) {
      *p = h->next;
      return;
    }
}

void helpers_reap(struct boxd *bd) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    struct helper *h;
    for (h = bd->helpers; h; h = h->next)
      if (h->pid == pid) break;
    if (!h) {
      pty_reaped(bd, pid, status); /* a terminal's shell, if it is one */
      continue;
    }
    helper_unlink(h);
    h->exited = 1;
    if (WIFSIGNALED(status)) h->code = -1, h->sig = WTERMSIG(status);
    else h->code = WEXITSTATUS(status), h->sig = 0;
    if (h == bd->prepared || h == bd->walled) {
      /* a ready helper that died unused is dropped, and its cgroup with it */
      if (h == bd->prepared) bd->prepared = NULL;
      else bd->walled = NULL;
      helper_close(h);
      cg_remove(&bd->cfg, h->name);
      free(h);
      continue;
    }
    struct exec *e = h->exec;
    if (!e) {
      /* a helper let go unused (limits failed), or taken by a command that was answered */
      helper_close(h);
      free(h);
      continue;
    }
    e->code = h->code, e->sig = h->sig;
    e->t_exit = now_ms() * 1000.0;
    close_stdin(e);
    exec_event(e, EV_EXIT);
  }
}

/* ---- the command's pipes ------------------------------------------------------------ */

static void pipes_interest(struct exec *e) {
  struct helper *h = e->h;
  uint32_t ev = e->paused ? 0 : EPOLLIN;
  if (h->out >= 0) ep_set(e->bd, h->out, &e->wout, ev, 0);
  if (h->err >= 0) ep_set(e->bd, h->err, &e->werr, ev, 0);
}

void exec_resume_output(struct exec *e) {
  if (!e->paused) return;
  e->paused = 0;
  if (e->h) pipes_interest(e);
}

size_t exec_stdin_queued(const struct exec *e) { return e->stdin_q.len - e->stdin_off; }

static void close_stdin(struct exec *e) {
  if (e->h) close_fd(e->bd, &e->h->in, 1);
  e->stdin_q.len = e->stdin_off = 0;
}

static void stdin_flush(struct exec *e) {
  struct helper *h = e->h;
  if (!h || h->in < 0) return;
  while (e->stdin_q.len > e->stdin_off) {
    ssize_t n = write(h->in, e->stdin_q.p + e->stdin_off, e->stdin_q.len - e->stdin_off);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      close_stdin(e); /* the command closed its stdin */
      return;
    }
    e->stdin_off += (size_t)n;
  }
  if (e->stdin_q.len == e->stdin_off) {
    e->stdin_q.len = e->stdin_off = 0;
    if (e->stdin_eof) {
      close_stdin(e);
      return;
    }
    ep_set(e->bd, h->in, &e->win, 0, 0);
  } else
    ep_set(e->bd, h->in, &e->win, EPOLLOUT, 0);
  if (e->conn && !e->conn->dead) conn_update(e->conn);
}

static void spec_flush(struct exec *e) {
  struct helper *h = e->h;
  if (!h || h->spec < 0) return;
  while (e->spec_q.len > e->spec_off) {
    ssize_t n = write(h->spec, e->spec_q.p + e->spec_off, e->spec_q.len - e->spec_off);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      e->spec_off = e->spec_q.len; /* the helper is gone: its exit says so */
      break;
    }
    e->spec_off += (size_t)n;
  }
  if (e->spec_off >= e->spec_q.len) {
    e->t_spec_sent = now_ms() * 1000.0;
    close_fd(e->bd, &h->spec, 1);
    buf_free(&e->spec_q);
  } else
    ep_set(e->bd, h->spec, &e->wspec, EPOLLOUT, 0);
}

/* stdout or stderr reached its end. */
static void pipe_closed(struct exec *e, int which) {
  close_fd(e->bd, which == K_STDOUT ? &e->h->out : &e->h->err, 1);
  e->open_pipes--;
  if (e->open_pipes == 0 && e->state == X_DRAINING) exec_event(e, EV_OUTPUT_DONE);
}

static void read_pipe(struct exec *e, int which) {
  struct helper *h = e->h;
  int fd = which == K_STDOUT ? h->out : h->err;
  if (fd < 0) return;
  char *chunk = e->bd->chunk;
  for (int rounds = 0; rounds < 4 && !e->paused; rounds++) {
    ssize_t n = read(fd, chunk, READ_CHUNK);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) return;
      pipe_closed(e, which);
      return;
    }
    if (n == 0) {
      pipe_closed(e, which);
      return;
    }
    struct conn *c = e->conn;
    if (!c || c->dead) continue; /* the client is gone: output is dropped */
    conn_frame(c, which, chunk, (size_t)n);
    conn_flush(c);
    if (!c->dead && conn_pending(c) > HIGH_WATER && !e->paused) {
      e->paused = 1;
      pipes_interest(e);
    }
  }
}

/* What the command wrote before it ended is already in the pipe: take it all (bounded,
   since processes left in the background may still be writing) before the pipe goes,
   whether or not its readiness was seen yet and whatever the back-pressure. */
static void drain(struct exec *e, int which) {
  char *chunk = e->bd->chunk;
  for (size_t taken = 0; taken < DRAIN_LIMIT;) {
    int fd = which == K_STDOUT ? e->h->out : e->h->err;
    if (fd < 0) return;
    ssize_t n = read(fd, chunk, READ_CHUNK);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    taken += (size_t)n;
    struct conn *c = e->conn;
    if (c && !c->dead) conn_frame(c, which, chunk, (size_t)n);
  }
}

void exec_on_watch(struct exec *e, enum wkind kind) {
  if (e->state == X_ANSWERED || !e->h) return;
  switch (kind) {
    case W_OUT: read_pipe(e, K_STDOUT); break;
    case W_ERR: read_pipe(e, K_STDERR); break;
    case W_IN: stdin_flush(e); break;
    case W_SPEC: spec_flush(e); break;
    default: break;
  }
}

/* ---- the lifecycle ------------------------------------------------------------------ */

static void enter_draining(struct exec *e) {
  e->timer_at = 0;
  if (e->open_pipes == 0) exec_event(e, EV_OUTPUT_DONE);
  else e->timer_at = now_ms() + GRACE_MS;
}

/* One round of SIGKILL to every pid in the command's cgroup; KILL_DONE when it is empty. */
static void kill_round(struct exec *e) {
  const struct config *cfg = &e->bd->cfg;
  /* no fork replaces what is killed, and the tree stands still while it is signalled */
  cg_no_forks(cfg, e->name);
  int frozen = cg_freeze(cfg, e->name, 1);
  pid_t *pids = NULL;
  size_t n = cg_procs(cfg, e->name, &pids);
  for (size_t i = 0; i < n; i++) kill(pids[i], SIGKILL);
  free(pids);
  if (frozen) cg_freeze(cfg, e->name, 0);
  if (n == 0 || now_ms() > e->kill_deadline) exec_event(e, EV_KILL_DONE);
  else e->timer_at = now_ms() + KILL_ROUND_MS;
}

static void unlink_exec(struct exec *e) {
  struct boxd *bd = e->bd;
  if (e->prev) e->prev->next = e->next;
  else bd->execs = e->next;
  if (e->next) e->next->prev = e->prev;
  bd->active_count--;
}

/* The phase times of a traced exec (µs of CLOCK_MONOTONIC, which the server shares):
   boxd's own and those the helper wrote on its trace pipe before it ran the command
   ("<start> <joined> <spec read> <privileges dropped> <landlock> <seccomp>"). */
static void put_trace(struct buf *j, const struct exec *e) {
  double ht[6] = {0};
  char text[512];
  ssize_t n = e->h->trace >= 0 ? read(e->h->trace, text, sizeof text - 1) : -1;
  if (n > 0) {
    text[n] = '\0';
    char *p = text;
    for (int i = 0; i < 6; i++) ht[i] = strtod(p, &p);
  }
  buf_printf(j, ",\"trace\":{\"requestUs\":%.0f,\"limitsUs\":%.0f,\"specSentUs\":%.0f,\"helperStartUs\":%.0f,"
                "\"joinedUs\":%.0f,\"specReadUs\":%.0f,\"privilegesUs\":%.0f,\"landlockUs\":%.0f,\"seccompUs\":%.0f,"
                "\"exitUs\":%.0f,\"answerUs\":%.0f}",
             e->t_request, e->t_limits, e->t_spec_sent, ht[0], ht[1], ht[2], ht[3], ht[4], ht[5], e->t_exit,
             now_ms() * 1000.0);
}

static void answer(struct exec *e) {
  struct boxd *bd = e->bd;
  drain(e, K_STDOUT);
  drain(e, K_STDERR);
  close_fd(bd, &e->h->out, 1);
  close_fd(bd, &e->h->err, 1);
  e->open_pipes = 0;
  struct usage u;
  cg_usage(&bd->cfg, e->name, &u);
  unlink_exec(e);
  /* the connection lets go of the command first: a write error while answering then
     closes the connection without an event for this command */
  struct conn *c = e->conn;
  e->conn = NULL;
  if (c) c->exec = NULL;
  if (c && !c->dead) {
    struct buf j = {0};
    buf_puts(&j, "{\"type\":\"exit\",\"exitCode\":");
    const char *sname = e->sig ? signal_name(e->sig) : NULL;
    if (e->sig) buf_puts(&j, "null");
    else buf_printf(&j, "%d", e->code);
    buf_puts(&j, ",\"signal\":");
    if (sname) json_put_string(&j, sname, strlen(sname));
    else buf_puts(&j, "null");
    buf_printf(&j, ",\"timedOut\":%s,\"cancelled\":%s,\"durationMs\":%lld,\"usage\":{\"cpuSeconds\":",
               e->kill == KILL_TIMEOUT ? "true" : "false", e->kill == KILL_CANCEL ? "true" : "false",
               (long long)(now_ms() - e->begun + 0.5));
    if (u.has_cpu) json_put_decimal(&j, u.cpu_ns, 9);
    else buf_puts(&j, "null");
    buf_puts(&j, ",\"peakMemoryBytes\":");
    if (u.has_peak) json_put_decimal(&j, u.peak_bytes, 0);
    else buf_puts(&j, "null");
    buf_puts(&j, "}");
    if (e->trace) put_trace(&j, e);
    /* kept: the client asked, sent all it had for this command (its stdin ended, no cancel,
       nothing undecoded), so the connection takes its next Open message */
    int kept = c->keep && e->eof_seen && e->kill != KILL_CANCEL && !c->input_bad && !c->rd_eof &&
               c->in.len == 0;
    if (kept) buf_puts(&j, ",\"kept\":true");
    buf_puts(&j, "}");
    conn_send_json(c, &j);
    if (kept) {
      c->state = C_OPEN;
      c->keep = 0;
      conn_update(c);
    } else
      conn_end(c);
  }
  if (c) conn_maybe_free(c);
  /* after the answer: removing a cgroup may wait for the kernel's cgroup lock */
  names_add(&bd->removals, e->name);
  /* the helper is done with: its remaining fds go */
  struct helper *h = e->h;
  helper_close(h);
  h->exec = NULL;
  if (h->exited) free(h);
  e->h = NULL;
  buf_free(&e->stdin_q);
  buf_free(&e->spec_q);
  bury(bd, e);
}

void exec_conn_gone(struct exec *e) {
  exec_event(e, EV_CANCEL);
  exec_resume_output(e); /* output is now dropped */
}

int exec_is_active(const struct boxd *bd, const char *name) {
  for (const struct exec *e = bd->execs; e; e = e->next)
    if (!strcmp(e->name, name)) return 1;
  return 0;
}

double exec_next_timer(const struct boxd *bd, double next) {
  for (const struct exec *e = bd->execs; e; e = e->next)
    if (e->timer_at > 0 && e->timer_at < next) next = e->timer_at;
  return next;
}

void exec_run_timers(struct boxd *bd, double now) {
  for (struct exec *e = bd->execs, *next; e; e = next) {
    next = e->next; /* e may be answered (and unlinked) below */
    if (e->timer_at <= 0 || e->timer_at > now) continue;
    switch (e->state) {
      case X_RUNNING:
        e->timer_at = 0;
        exec_event(e, EV_TIMEOUT);
        break;
      case X_KILLING:
      case X_KILLING_EXITED:
        kill_round(e);
        break;
      case X_DRAINING:
        exec_event(e, EV_OUTPUT_DONE);
        break;
      case X_KILLED:
      case X_ANSWERED:
        e->timer_at = 0; /* no timer in these states */
        break;
    }
  }
}

/* ---- start, and frames from the client ---------------------------------------------- */

void exec_start(struct conn *c, const struct spec *s) {
  struct boxd *bd = c->bd;
  struct buf err = {0}, options = {0};
  double t_request = now_ms() * 1000.0;
  if (spec_options(s, bd->cfg.seccomp, &options)) {
    buf_free(&options);
    conn_fail(c, "internal", "out of memory");
    return;
  }
  /* the helper walled ahead takes the command if it holds exactly its walls (and is let go
     otherwise); else the plain ready helper, given everything */
  struct buf walls = {0};
  int ahead = spec_walls(s, bd->cfg.seccomp, &walls);
  if (ahead < 0) {
    buf_free(&walls);
    buf_free(&options);
    conn_fail(c, "internal", "out of memory");
    return;
  }
  struct helper *h = NULL, *w = bd->walled;
  if (w) {
    bd->walled = NULL;
    struct buf filter = {0};
    int same = ahead == 0 && walls.len == w->walls.len && !memcmp(walls.p, w->walls.p, walls.len) &&
               !read_whole(bd->cfg.seccomp, &filter) && filter.len == w->filter.len &&
               (filter.len == 0 || !memcmp(filter.p, w->filter.p, filter.len));
    buf_free(&filter);
    if (!same) helper_let_go(w);
    else {
      h = w;
      buf_free(&options);
      if (spec_command(s, &options)) {
        buf_free(&walls);
        helper_let_go(h);
        conn_fail(c, "internal", "out of memory");
        return;
      }
    }
  }
  if (!h) {
    h = bd->prepared;
    bd->prepared = NULL;
  }
  /* the same walls twice in a row: the next command is likely the same agent's again */
  int again = ahead == 0 && walls.len && walls.len == bd->walls_last.len &&
              !memcmp(walls.p, bd->walls_last.p, walls.len);
  buf_free(&bd->walls_next);
  if (again && buf_put(&bd->walls_next, walls.p, walls.len)) buf_free(&bd->walls_next);
  buf_free(&bd->walls_last);
  bd->walls_last = walls;
  if (!h) h = helper_spawn(bd, &err);
  if (!h) {
    char m[1200];
    snprintf(m, sizeof m, "cannot start the command: %s", err.p ? err.p : "?");
    buf_free(&err);
    buf_free(&options);
    conn_fail(c, "spawn_failed", m);
    return;
  }
  if (cg_limit(&bd->cfg, h->name, s->has_mem, s->mem_mib, s->has_pids, s->pids, &err)) {
    /* the helper exits unused (its fds were never watched); the sweep removes its cgroup */
    helper_let_go(h);
    char m[1200];
    snprintf(m, sizeof m, "cannot set the command's limits: %s", err.p ? err.p : "?");
    buf_free(&err);
    buf_free(&options);
    conn_fail(c, "spawn_failed", m);
    return;
  }
  struct exec *e = xcalloc(1, sizeof *e);
  e->bd = bd;
  e->state = X_RUNNING;
  e->conn = c;
  c->exec = e;
  e->h = h;
  h->exec = e;
  snprintf(e->name, sizeof e->name, "%s", h->name);
  e->begun = now_ms();
  e->generation = s->generation;
  e->trace = s->trace;
  e->t_request = t_request;
  e->t_limits = now_ms() * 1000.0;
  e->wout = (struct watch){W_OUT, e};
  e->werr = (struct watch){W_ERR, e};
  e->win = (struct watch){W_IN, e};
  e->wspec = (struct watch){W_SPEC, e};
  e->spec_q = options;
  e->next = bd->execs;
  if (bd->execs) bd->execs->prev = e;
  bd->execs = e;
  bd->active_count++;
  if (s->generation && !names_has(&bd->generations, e->name)) names_add(&bd->generations, e->name);

  ep_set(bd, h->spec, &e->wspec, 0, 1);
  ep_set(bd, h->in, &e->win, 0, 1);
  ep_set(bd, h->out, &e->wout, EPOLLIN, 1);
  ep_set(bd, h->err, &e->werr, EPOLLIN, 1);
  e->open_pipes = 2;
  spec_flush(e);
  bd->want_prepare = 1;

  if (s->timeout_ms > 0) e->timer_at = now_ms() + (double)s->timeout_ms;
  struct buf j = {0};
  buf_printf(&j, "{\"type\":\"started\",\"pid\":%d,\"cgroup\":\"%s\"}", h->pid, e->name);
  conn_send_json(c, &j);
}

void exec_frame(struct exec *e, int kind, const char *payload, size_t len) {
  switch (kind) {
    case K_STDIN:
      if (e->h && e->h->in >= 0 && !e->stdin_eof) {
        buf_put(&e->stdin_q, payload, len);
        stdin_flush(e);
      }
      return;
    case K_CONTROL: {
      struct jv *x = json_parse(payload, len);
      const struct jv *type = json_get(x, "type");
      int ok = 0;
      if (json_is_str(type, "stdin_eof")) {
        ok = 1;
        e->eof_seen = 1;
        if (e->h && e->h->in >= 0 && !e->stdin_eof) {
          e->stdin_eof = 1;
          stdin_flush(e);
        }
      } else if (json_is_str(type, "cancel")) {
        ok = 1;
        exec_event(e, EV_CANCEL);
      } else if (json_is_str(type, "resize")) {
        ok = spec_is_int(json_get(x, "cols"), 1, 1000) && spec_is_int(json_get(x, "rows"), 1, 1000);
      }
      json_free(x);
      if (!ok) exec_event(e, EV_CANCEL);
      return;
    }
    default:
      exec_event(e, EV_CANCEL);
      return;
  }
}
