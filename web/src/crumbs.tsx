// The organisation's link in a page's breadcrumbs, by its name.
import { useOrgs } from "./api";
import { Link } from "./router";

export function OrgCrumb({ orgId }: { orgId: string }) {
  const name = useOrgs().data?.find((o) => o.id === orgId)?.name;
  return <Link href={`/orgs/${orgId}`}>{name ?? "…"}</Link>;
}
