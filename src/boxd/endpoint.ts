// How the server reaches boxd inside a box: a unix socket on this host, or TCP for boxes
// that run elsewhere. Providers hand one out with every box they start.
export type BoxdEndpoint = { kind: "unix"; path: string } | { kind: "tcp"; host: string; port: number };
