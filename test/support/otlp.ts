// An OTLP/HTTP receiver on loopback, as a collector's is: it takes the JSON exports of traces
// (/v1/traces) and metrics (/v1/metrics) and keeps them (their raw text too, to look for what
// must never be there), answering 200 with an empty partial success.
import http from "node:http";
import type { AddressInfo } from "node:net";

export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status?: { code?: number; message?: string };
}

export interface OtlpReceiver {
  /** The base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT). */
  url: string;
  spans: OtlpSpan[];
  /** The names of the metrics received. */
  metrics: Set<string>;
  /** Every body received, as text. */
  raw: string[];
  /** The headers of every export. */
  headers: http.IncomingHttpHeaders[];
  /** The exports received, by signal. */
  posts: { traces: number; metrics: number };
  close(): Promise<void>;
}

type AnyValue = {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
};

function valueOf(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

const attributesOf = (list: { key: string; value: AnyValue }[] | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const out: Omit<OtlpReceiver, "url" | "close"> = {
    spans: [],
    metrics: new Set(),
    raw: [],
    headers: [],
    posts: { traces: 0, metrics: 0 },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      out.raw.push(text);
      out.headers.push(req.headers);
      try {
        const body: any = JSON.parse(text);
        if (req.url === "/v1/traces") {
          out.posts.traces++;
          for (const rs of body.resourceSpans ?? [])
            for (const ss of rs.scopeSpans ?? [])
              for (const s of ss.spans ?? [])
                out.spans.push({ ...s, attributes: attributesOf(s.attributes) } as OtlpSpan);
        } else if (req.url === "/v1/metrics") {
          out.posts.metrics++;
          for (const rm of body.resourceMetrics ?? [])
            for (const sm of rm.scopeMetrics ?? []) for (const m of sm.metrics ?? []) out.metrics.add(m.name);
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end("{}");
      } catch {
        res.writeHead(400);
        res.end();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return {
    ...out,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
