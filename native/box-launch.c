/*
 * box-launch: starts boxes for the local provider, so that the server never forks itself.
 *
 * A fork copies the parent's page tables; the server's are large (its heap, the embedded
 * database), and every fork of it blocked its event loop for tens of milliseconds while
 * the kernel copied them: twenty boxes starting at once waited for each other there. The
 * provider starts this small process once and asks it for every box; its own forks cost
 * what a small program's do.
 *
 * The server writes requests on our stdin, each a 4-byte little-endian length, then that
 * many bytes of NUL-terminated strings:
 *
 *   tag, log file, filter file, argc, argv..., envc, env...
 *
 * and reads lines on our stdout:
 *
 *   started <tag> <pid>     the box's first process is running (it is our child)
 *   ready <tag>             it wrote "ready\n" on its fd 3
 *   exit <tag> <code> <sig> it ended (reaped here; code -1 when killed by sig)
 *   error <tag> <reason>    nothing was started
 *
 * The child runs in a session of its own (detached), with stdin /dev/null, stdout and
 * stderr the log file (opened for appending), fd 3 the write end of a pipe we read for
 * "ready", fd 4 the filter file (opened for reading), and nothing else open. Boxes
 * outlive this process: when the server goes (our stdin ends) we exit and they stay, as
 * they would have stayed with the server as their parent.
 *
 * A failure of its own prints "box-launch: <step>: <reason>" on stderr and exits 1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_BOXES 512
#define MAX_REQUEST (1u << 20)
#define MAX_ARGS 4096

struct box {
  int used;
  char tag[64];
  pid_t pid;
  int ready_fd;   /* our end of its fd 3, -1 once closed */
  char seen[64];  /* the start of what it wrote, where "ready\n" is looked for */
  size_t seen_len;
  int said;       /* "ready" was said */
};

static struct box boxes[MAX_BOXES];

static void die(const char *step) {
  fprintf(stderr, "box-launch: %s: %s\n", step, strerror(errno));
  exit(1);
}

/* Writes one whole line on stdout; the server gone means we go too. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n > sizeof line - 2) n = sizeof line - 2;
  line[n++] = '\n';
  for (int off = 0; off < n;) {
    ssize_t w = write(1, line + off, (size_t)(n - off));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) exit(0);
    off += (int)w;
  }
}

static int read_full(int fd, void *buf, size_t len) {
  size_t off = 0;
  while (off < len) {
    ssize_t r = read(fd, (char *)buf + off, len - off);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    off += (size_t)r;
  }
  return 0;
}

/* The next NUL-terminated string of the request, or NULL past its end. */
static char *next(char **p, char *end) {
  if (*p >= end) return NULL;
  char *s = *p;
  char *nul = memchr(s, 0, (size_t)(end - s));
  if (!nul) return NULL;
  *p = nul + 1;
  return s;
}

static int count_of(const char *s, long max) {
  if (!s || !*s) return -1;
  char *e;
  long n = strtol(s, &e, 10);
  return (*e || n < 0 || n > max) ? -1 : (int)n;
}

/* In the child: the fds it gets, a session of its own, then the program. */
static void become(char **argv, char **env, int log_fd, int ready_w, int filter_fd) {
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  if (setsid() < 0) _exit(125);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) _exit(125);
  /* above 4 first, so that no dup2 below overwrites a source still needed */
  int fds[4] = {null_fd, log_fd, ready_w, filter_fd};
  for (int i = 0; i < 4; i++) {
    int moved = fcntl(fds[i], F_DUPFD_CLOEXEC, 10);
    if (moved < 0) _exit(125);
    fds[i] = moved;
  }
  if (dup2(fds[0], 0) < 0 || dup2(fds[1], 1) < 0 || dup2(fds[1], 2) < 0 || dup2(fds[2], 3) < 0 ||
      dup2(fds[3], 4) < 0)
    _exit(125);
  for (int fd = 5; fd < 1024; fd++) close(fd);
  execve(argv[0], argv, env);
  _exit(127);
}

static void launch(char *req, uint32_t len) {
  char *p = req, *end = req + len;
  char *tag = next(&p, end), *log_path = next(&p, end), *filter_path = next(&p, end);
  if (!tag || !log_path || !filter_path || strlen(tag) >= sizeof boxes[0].tag) {
    say("error %s bad request", tag && strlen(tag) < 64 ? tag : "-");
    return;
  }
  int argc = count_of(next(&p, end), MAX_ARGS);
  char **argv = argc > 0 ? calloc((size_t)argc + 1, sizeof *argv) : NULL;
  for (int i = 0; argv && i < argc; i++)
    if (!(argv[i] = next(&p, end))) argc = -1;
  int envc = argc > 0 ? count_of(next(&p, end), MAX_ARGS) : -1;
  char **env = envc >= 0 ? calloc((size_t)envc + 1, sizeof *env) : NULL;
  for (int i = 0; env && i < envc; i++)
    if (!(env[i] = next(&p, end))) envc = -1;
  if (argc <= 0 || !argv || envc < 0 || !env) {
    say("error %s bad request", tag);
    free(argv);
    free(env);
    return;
  }
  struct box *b = NULL;
  for (int i = 0; i < MAX_BOXES && !b; i++)
    if (!boxes[i].used) b = &boxes[i];
  int log_fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  int filter_fd = open(filter_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  int pipe_fds[2] = {-1, -1};
  const char *why = !b                                       ? "too many boxes starting"
                    : log_fd < 0                             ? "cannot open the log file"
                    : filter_fd < 0                          ? "cannot open the filter file"
                    : pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) ? "cannot make the ready pipe"
                                                             : NULL;
  pid_t pid = -1;
  if (!why) {
    /* the child's end blocks: boxd writes "ready" with plain writes */
    int fl = fcntl(pipe_fds[1], F_GETFL);
    fcntl(pipe_fds[1], F_SETFL, fl & ~O_NONBLOCK);
    pid = fork();
    if (pid == 0) become(argv, env, log_fd, pipe_fds[1], filter_fd);
    if (pid < 0) why = "fork failed";
  }
  if (log_fd >= 0) close(log_fd);
  if (filter_fd >= 0) close(filter_fd);
  if (pipe_fds[1] >= 0) close(pipe_fds[1]);
  free(argv);
  free(env);
  if (why) {
    if (pipe_fds[0] >= 0) close(pipe_fds[0]);
    say("error %s %s (%s)", tag, why, strerror(errno));
    return;
  }
  memset(b, 0, sizeof *b);
  b->used = 1;
  snprintf(b->tag, sizeof b->tag, "%s", tag);
  b->pid = pid;
  b->ready_fd = pipe_fds[0];
  say("started %s %d", b->tag, (int)pid);
}

/* Reads what the box wrote on its fd 3; 1 while more may come. */
static int on_ready_fd(struct box *b) {
  char buf[256];
  ssize_t r = read(b->ready_fd, buf, sizeof buf);
  if (r < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  if (r > 0) {
    /* "ready\n" may come in pieces; what comes after it is dropped */
    for (ssize_t i = 0; i < r && b->seen_len < sizeof b->seen; i++) b->seen[b->seen_len++] = buf[i];
    if (!b->said && memmem(b->seen, b->seen_len, "ready\n", 6)) {
      say("ready %s", b->tag);
      b->said = 1;
    }
    return 1;
  }
  close(b->ready_fd);
  b->ready_fd = -1;
  return 0;
}

static void reap(void) {
  for (;;) {
    int status;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    for (int i = 0; i < MAX_BOXES; i++) {
      struct box *b = &boxes[i];
      if (!b->used || b->pid != pid) continue;
      /* a "ready" written before it ended is said before its exit */
      while (b->ready_fd >= 0 && on_ready_fd(b)) {
      }
      if (b->ready_fd >= 0) close(b->ready_fd);
      if (WIFSIGNALED(status)) say("exit %s -1 %d", b->tag, WTERMSIG(status));
      else say("exit %s %d 0", b->tag, WEXITSTATUS(status));
      b->used = 0;
      break;
    }
  }
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  if (sigprocmask(SIG_BLOCK, &chld, NULL) < 0) die("sigprocmask");
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0) die("signalfd");
  struct pollfd pfds[MAX_BOXES + 2];
  struct box *of[MAX_BOXES + 2];
  for (;;) {
    int n = 0;
    pfds[n] = (struct pollfd){.fd = 0, .events = POLLIN};
    of[n++] = NULL;
    pfds[n] = (struct pollfd){.fd = sfd, .events = POLLIN};
    of[n++] = NULL;
    for (int i = 0; i < MAX_BOXES; i++)
      if (boxes[i].used && boxes[i].ready_fd >= 0) {
        pfds[n] = (struct pollfd){.fd = boxes[i].ready_fd, .events = POLLIN};
        of[n++] = &boxes[i];
      }
    if (poll(pfds, (nfds_t)n, -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (pfds[1].revents) {
      struct signalfd_siginfo si;
      while (read(sfd, &si, sizeof si) == sizeof si) {
      }
      reap();
    }
    for (int i = 2; i < n; i++)
      if (pfds[i].revents && of[i]->used && of[i]->ready_fd == pfds[i].fd) on_ready_fd(of[i]);
    if (pfds[0].revents) {
      uint8_t hdr[4];
      if (read_full(0, hdr, 4) < 0) return 0; /* the server is gone; boxes stay */
      uint32_t len = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
      if (len == 0 || len > MAX_REQUEST) {
        errno = EINVAL;
        die("request length");
      }
      char *req = malloc(len);
      if (!req) die("malloc");
      if (read_full(0, req, len) < 0) return 0;
      launch(req, len);
      free(req);
    }
  }
}
