// The flow instance a conversation is held in: its turns work in the instance's /workspace.
// Asked at each turn (below conversations and flows both); an ended instance refuses the turn.
import { eq } from "drizzle-orm";
import { WarrenError } from "../errors.js";
import type { Db } from "../store/index.js";
import { schema } from "../store/index.js";
import type { InstanceRef } from "./service.js";

/** flow.instance_ended: no more work goes on in an ended instance. */
export const instanceEnded = () =>
  new WarrenError(
    "flow.instance_ended",
    "the flow instance has ended (its workspace is kept); start a new instance to work in it again",
  );

/** The instance a conversation is held in, or undefined; throws flow.instance_ended for an ended one. */
export async function instanceOfConversation(
  db: Db,
  conversationId: string,
): Promise<InstanceRef | undefined> {
  const [r] = await db
    .select({ i: schema.flowInstances })
    .from(schema.flowInstanceConversations)
    .innerJoin(schema.flowInstances, eq(schema.flowInstances.id, schema.flowInstanceConversations.instanceId))
    .where(eq(schema.flowInstanceConversations.conversationId, conversationId));
  if (!r) return undefined;
  if (r.i.status !== "running") throw instanceEnded();
  return { id: r.i.id, flowId: r.i.flowId, gid: r.i.gid };
}
