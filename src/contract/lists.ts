// The lists the contract owns (roles, trust values, kinds, run statuses, command limits). They
// live in src/sdk/lists.ts, because the SDK is published on its own and may load nothing
// outside its folder; everything else imports them from here.
export * from "../sdk/lists.js";
