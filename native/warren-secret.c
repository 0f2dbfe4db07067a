/*
 * warren-secret: an agent's command calls the server from inside its box.
 *
 *   warren-secret list               the names and descriptions of the secrets that
 *                                    reach this agent (never a value)
 *   warren-secret store NAME FILE    saves the content of FILE, a regular file in the
 *                                    agent's own home reached without a link, as the
 *                                    secret NAME granted to this agent
 *
 * It connects to boxd's calls socket (native/boxd/calls.h), which knows the caller by the
 * uid the kernel gives for the connection; nothing sent here names the agent. It sends one
 * request, prints what the server answers and exits with its code: 0 done, 1 refused (the
 * message starts with the error's code, e.g. secret.limit), 2 bad usage, 69 the server or
 * boxd cannot be reached.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define CALLS_SOCKET "/run/calls/calls.sock"
#define MAX_ANSWER (1024 * 1024)
#define EXIT_USAGE 2
#define EXIT_UNAVAILABLE 69

static void usage(void) {
  fputs("usage: warren-secret list\n"
        "       warren-secret store NAME FILE   (FILE: a regular file in your home, no link)\n",
        stderr);
  exit(EXIT_USAGE);
}

struct text {
  char *p;
  size_t len, cap;
};

static void put(struct text *t, const char *s, size_t n) {
  if (t->len + n + 1 > t->cap) {
    size_t cap = (t->len + n + 1) * 2;
    char *p = realloc(t->p, cap);
    if (!p) {
      fputs("warren-secret: out of memory\n", stderr);
      exit(EXIT_UNAVAILABLE);
    }
    t->p = p;
    t->cap = cap;
  }
  memcpy(t->p + t->len, s, n);
  t->len += n;
  t->p[t->len] = 0;
}

static void puts_(struct text *t, const char *s) { put(t, s, strlen(s)); }

/* A JSON string of s (bytes above 0x7f pass as they are: the server checks UTF-8). */
static void put_json(struct text *t, const char *s) {
  puts_(t, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char esc[8];
    if (*p == '"' || *p == '\\') {
      esc[0] = '\\', esc[1] = (char)*p;
      put(t, esc, 2);
    } else if (*p < 0x20) {
      snprintf(esc, sizeof esc, "\\u%04x", *p);
      puts_(t, esc);
    } else
      put(t, (const char *)p, 1);
  }
  puts_(t, "\"");
}

static int read_full(int fd, void *buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, (char *)buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    got += (size_t)r;
  }
  return 0;
}

static int write_full(int fd, const void *buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = write(fd, (const char *)buf + done, n - done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    done += (size_t)r;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct text req = {0};
  if (argc == 2 && !strcmp(argv[1], "list")) {
    puts_(&req, "{\"op\":\"list\"}");
  } else if (argc == 4 && !strcmp(argv[1], "store")) {
    /* a relative FILE is relative to where the command stands */
    char path[PATH_MAX * 2];
    if (argv[3][0] == '/') snprintf(path, sizeof path, "%s", argv[3]);
    else {
      char cwd[PATH_MAX];
      if (!getcwd(cwd, sizeof cwd)) {
        fprintf(stderr, "warren-secret: cannot tell the current folder: %s\n", strerror(errno));
        return EXIT_USAGE;
      }
      snprintf(path, sizeof path, "%s/%s", cwd, argv[3]);
    }
    puts_(&req, "{\"op\":\"store\",\"name\":");
    put_json(&req, argv[2]);
    puts_(&req, ",\"path\":");
    put_json(&req, path);
    puts_(&req, "}");
  } else
    usage();

  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  strcpy(a.sun_path, CALLS_SOCKET);
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
    fprintf(stderr, "warren-secret: cannot reach boxd at %s: %s\n", CALLS_SOCKET, strerror(errno));
    return EXIT_UNAVAILABLE;
  }
  unsigned char head[5];
  uint32_t len = (uint32_t)req.len + 1;
  head[0] = (unsigned char)(len >> 24), head[1] = (unsigned char)(len >> 16), head[2] = (unsigned char)(len >> 8);
  head[3] = (unsigned char)len, head[4] = 1;
  if (write_full(fd, head, 5) || write_full(fd, req.p, req.len)) {
    fprintf(stderr, "warren-secret: sending the request failed: %s\n", strerror(errno));
    return EXIT_UNAVAILABLE;
  }
  /* the answer: STDOUT (3) and STDERR (4) text, then a control frame {"exit":N} */
  for (;;) {
    if (read_full(fd, head, 5)) break;
    uint32_t n = (uint32_t)head[0] << 24 | (uint32_t)head[1] << 16 | (uint32_t)head[2] << 8 | head[3];
    if (n < 1 || n > MAX_ANSWER) break;
    char *p = malloc(n);
    if (!p || read_full(fd, p, n - 1)) break;
    p[n - 1] = 0;
    if (head[4] == 3) write_full(1, p, n - 1);
    else if (head[4] == 4) write_full(2, p, n - 1);
    else if (head[4] == 1) {
      const char *e = strstr(p, "\"exit\":");
      int code = e ? atoi(e + 7) : EXIT_UNAVAILABLE;
      free(p);
      return code;
    }
    free(p);
  }
  fputs("warren-secret: boxd ended the call without an answer\n", stderr);
  return EXIT_UNAVAILABLE;
}
