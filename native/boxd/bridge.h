/*
 * Bridges (bridge.c): TCP ports inside the box whose connections are carried to the
 * server, e.g. the egress proxy (docs/boxes.md, "Bridges").
 *
 * boxd is given its bridges at start (--bridge NAME=PORT, repeated) and listens on
 * 127.0.0.1:PORT for each, below the agents' port blocks (which start at 20000) so that no
 * agent may bind them. Who connects is the uid that owns the connecting socket, read from
 * the box's /proc/net/tcp (the entry whose local address is the accepted connection's
 * peer): never anything the client sends. A connection without an owner found, or while
 * no server holds the `bridges` channel, is closed at once.
 *
 * The server holds one standing `bridges` connection (protocol.ts). For each accepted
 * connection boxd sends on it {"type":"bridge","id":N,"name":"..","uid":U}; the server
 * then opens a new connection {"op":"bridge","id":N}, boxd answers {"type":"forwarded"}
 * and that connection is from then on a raw byte pipe to the agent's socket, exactly like
 * a forwarded one (forward.c). A connection the server does not claim within
 * BRIDGE_CLAIM_MS is closed.
 */
#ifndef BOXD_BRIDGE_H
#define BOXD_BRIDGE_H

#include "boxd.h"

#define MAX_BRIDGES 8
#define BRIDGE_CLAIM_MS 10000
/* Accepted connections waiting for the server's claim, in all and of one uid. */
#define BRIDGE_MAX_PENDING 256
#define BRIDGE_MAX_PENDING_PER_UID 64
/* Bridge ports sit below the agents' port blocks (PORT_BASE in src/machines/placement.ts). */
#define BRIDGE_PORT_LIMIT 20000

struct conn;

/* Takes a --bridge NAME=PORT argument into the config; an error message or NULL. */
const char *bridge_arg(struct config *cfg, const char *value);
/* Listens on every bridge's port; -1 with errno (and the bridge's port in *port). */
int bridges_listen(struct boxd *bd, int *port);
/* An event on a bridge's listening socket. */
void bridges_on_watch(struct boxd *bd, struct watch *w);
/* The server's standing `bridges` connection: accepted connections are offered on it. */
void bridges_attach(struct conn *c);
/* The server's `bridges` connection ended: waiting connections are closed. */
void bridges_server_gone(struct boxd *bd);
/* The server's claim of connection id: c becomes its pipe (or is answered an error). */
void bridge_claim(struct conn *c, unsigned long id);
/* Closes connections waiting for longer than BRIDGE_CLAIM_MS. */
void bridges_expire(struct boxd *bd, double now);

#endif
