/*
 * box-bridge: joins its stdin and stdout to a unix socket, byte for byte:
 *
 *   box-bridge /run/boxd/boxd.sock
 *
 * The kubernetes provider reaches boxd in a box's Pod with it: the API server's exec runs
 * it in the Pod and carries its stdin and stdout over the exec connection, so one exec is
 * one connection to boxd, speaking boxd's own protocol (src/boxd/protocol.ts).
 * The end of stdin becomes the end of the socket's writing side (shutdown), and the end of
 * the socket ends the bridge once what it sent is written out. Exits 0 then; 1 with
 * "box-bridge: <step>: <reason>" on stderr when the socket cannot be reached or fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int die(const char *step) {
  dprintf(2, "box-bridge: %s: %s\n", step, strerror(errno));
  return 1;
}

static int write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    buf += n;
    len -= (size_t)n;
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    dprintf(2, "usage: box-bridge SOCKET\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  if (strlen(argv[1]) >= sizeof addr.sun_path) {
    dprintf(2, "box-bridge: arguments: the socket path is too long\n");
    return 2;
  }
  strcpy(addr.sun_path, argv[1]);
  int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (sock < 0) return die("socket");
  if (connect(sock, (struct sockaddr *)&addr, sizeof addr) < 0) return die("connect");
  int in_open = 1;
  char buf[65536];
  for (;;) {
    struct pollfd p[2] = {{.fd = sock, .events = POLLIN}, {.fd = in_open ? 0 : -1, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return die("poll");
    }
    if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      ssize_t n = read(sock, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return die("read socket");
      if (n == 0) return 0;
      if (write_all(1, buf, (size_t)n) < 0) return die("write stdout");
    }
    if (in_open && (p[1].revents & (POLLIN | POLLHUP | POLLERR))) {
      ssize_t n = read(0, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        in_open = 0;
        shutdown(sock, SHUT_WR);
        continue;
      }
      if (write_all(sock, buf, (size_t)n) < 0) return die("write socket");
    }
  }
}
