/*
 * Agents' calls to the server (calls.c): `warren-secret` inside the box.
 *
 * boxd listens on a second socket (--calls-socket, mode 0666) that agents' commands may
 * connect to. Who calls is the uid the kernel gives for the connection (SO_PEERCRED, in
 * boxd's own user namespace, where agents' ids are themselves), never anything the caller
 * sends. The caller sends one control frame (a JSON object, at most 64 KiB); boxd passes it
 * to the server's standing `calls` connection (protocol.ts) as
 *   {"type":"call","id":N,"uid":U,"request":<the caller's object>}
 * and the server answers {"type":"reply","id":N,"exit":E,"stdout":"..","stderr":".."}.
 * The caller then gets a STDOUT frame, a STDERR frame (each when not empty) and a control
 * frame {"exit":E}, and the connection ends. Without a server connection, or when it goes
 * away before answering, the caller gets exit CALL_EXIT_UNAVAILABLE.
 */
#ifndef BOXD_CALLS_H
#define BOXD_CALLS_H

#include "boxd.h"

#define CALL_MAX_REQUEST (64 * 1024)
#define CALL_MAX_OPEN 64
#define CALL_MAX_PER_UID 8
#define CALL_EXIT_USAGE 2
#define CALL_EXIT_UNAVAILABLE 69

/* Listens on cfg.calls_socket (nothing when not given); -1 with errno on failure. */
int calls_listen(struct boxd *bd);
/* An event on the calls socket or a caller's connection. */
void calls_on_watch(struct boxd *bd, struct watch *w, uint32_t ev);
/* The server's `calls` connection: the calls go to it from now on. */
void calls_attach(struct conn *c);
/* The server's connection ended: calls waiting on it are answered unavailable. */
void calls_server_gone(struct boxd *bd);
/* A reply from the server (one control frame); -1 when it is not one. */
int calls_reply(struct boxd *bd, const char *p, size_t n);

#endif
