// Routes validate their requests and serialise their answers from the contract's schemas:
// a field the schema lacks never leaves, a wrong type is an error rather than an answer.
import assert from "node:assert/strict";
import { test } from "node:test";
import Fastify from "fastify";
import { z } from "zod";
import { registerRoutes, route } from "./route.js";
import { WarrenError } from "../errors.js";

const Thing = z.object({ id: z.string(), size: z.number() }).meta({ id: "Thing" });
const ThingRequest = z
  .object({ size: z.number().int().min(1) })
  .strict()
  .meta({ id: "ThingRequest" });

async function app(answer: () => unknown) {
  const a = Fastify();
  a.decorateRequest("identity", null);
  a.addHook("onRequest", async (req) => {
    req.identity = { userId: "usr_test", email: "t@example.com" };
  });
  a.setErrorHandler(async (err: unknown, _req, reply) => {
    if (err instanceof WarrenError)
      return reply.code(err.status).send({ error: { code: err.code, message: err.message } });
    return reply.code(500).send({ error: { code: "internal", message: "internal error" } });
  });
  registerRoutes(a, [
    route({
      method: "POST",
      url: "/things/:id",
      id: "things.create",
      tag: "things",
      summary: "a thing",
      params: z.object({ id: z.string().regex(/^t\d+$/) }),
      body: ThingRequest,
      status: 201,
      response: Thing,
      handler: async () => answer() as z.input<typeof Thing>,
    }),
  ]);
  await a.ready();
  return a;
}

test("an answer keeps only its schema's fields", async () => {
  const a = await app(() => ({ id: "t1", size: 3, secret: "do-not-send", row: { internal: true } }));
  const r = await a.inject({ method: "POST", url: "/things/t1", payload: { size: 3 } });
  assert.equal(r.statusCode, 201);
  assert.deepEqual(r.json(), { id: "t1", size: 3 });
  assert.doesNotMatch(r.body, /do-not-send/);
  await a.close();
});

test("an answer of the wrong type is a 500, not a wrong answer", async () => {
  const a = await app(() => ({ id: "t1", size: "three" }));
  const r = await a.inject({ method: "POST", url: "/things/t1", payload: { size: 3 } });
  assert.equal(r.statusCode, 500);
  assert.doesNotMatch(r.body, /three/);
  await a.close();
});

test("requests are checked by the same schemas: path, body, unknown fields", async () => {
  const a = await app(() => ({ id: "t1", size: 3 }));
  for (const [url, payload, field] of [
    ["/things/x", { size: 3 }, /path\.id/],
    ["/things/t1", { size: 0 }, /body\.size/],
    ["/things/t1", { size: 3, extra: 1 }, /unknown field\(s\) extra/],
    ["/things/t1", undefined, /body\.size: is required/],
  ] as const) {
    const r = await a.inject({ method: "POST", url, ...(payload ? { payload } : {}) });
    assert.equal(r.statusCode, 400, `${url} ${JSON.stringify(payload)}`);
    assert.equal(r.json().error.code, "request.invalid");
    assert.match(r.json().error.message, field);
  }
  await a.close();
});
