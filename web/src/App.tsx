// The shell: header, navigation, and the page for the address.
import { lazy, Suspense } from "react";
import { Link, match, useLocation } from "./router";
import { OrgsPage } from "./pages/Orgs";
import { OrgPage } from "./pages/Org";
import { MachinePage } from "./pages/Machine";
import { AgentPage } from "./pages/Agent";
import { SecretsPage } from "./pages/Secrets";
import { ConnectionsPage } from "./pages/Connections";
import { OrgUsagePage } from "./pages/Usage";
import { Loading } from "./ui";
import { Account, SignedIn } from "./account";

const ThreadPage = lazy(() => import("./pages/Thread").then((m) => ({ default: m.ThreadPage })));
const NotesPage = lazy(() => import("./pages/Notes").then((m) => ({ default: m.NotesPage })));
const TablesPage = lazy(() => import("./pages/Tables").then((m) => ({ default: m.TablesPage })));
const FlowsPage = lazy(() => import("./pages/Flows").then((m) => ({ default: m.FlowsPage })));
const InstancePage = lazy(() => import("./pages/Flows").then((m) => ({ default: m.InstancePage })));
const RunPage = lazy(() => import("./pages/Run").then((m) => ({ default: m.RunPage })));

function Page() {
  const { path } = useLocation();
  let m: Record<string, string> | null;
  if (path === "/") return <OrgsPage />;
  if ((m = match("/orgs/:id", path))) return <OrgPage id={m.id ?? ""} />;
  if ((m = match("/orgs/:id/notes", path)))
    return (
      <Suspense fallback={<Loading />}>
        <NotesPage orgId={m.id ?? ""} />
      </Suspense>
    );
  if ((m = match("/orgs/:id/tables", path)))
    return (
      <Suspense fallback={<Loading />}>
        <TablesPage orgId={m.id ?? ""} />
      </Suspense>
    );
  if ((m = match("/orgs/:id/usage", path))) return <OrgUsagePage id={m.id ?? ""} />;
  if ((m = match("/orgs/:id/flows", path)))
    return (
      <Suspense fallback={<Loading />}>
        <FlowsPage orgId={m.id ?? ""} />
      </Suspense>
    );
  if ((m = match("/flow-instances/:id", path)))
    return (
      <Suspense fallback={<Loading />}>
        <InstancePage id={m.id ?? ""} />
      </Suspense>
    );
  if ((m = match("/machines/:id", path))) return <MachinePage id={m.id ?? ""} />;
  if ((m = match("/agents/:id/runs/:run", path)))
    return (
      <Suspense fallback={<Loading />}>
        <RunPage agentId={m.id ?? ""} runId={m.run ?? ""} />
      </Suspense>
    );
  if ((m = match("/agents/:id/conversations/:conversation", path)))
    return (
      <Suspense fallback={<Loading />}>
        <ThreadPage key={m.conversation} agentId={m.id ?? ""} conversationId={m.conversation ?? ""} />
      </Suspense>
    );
  if ((m = match("/agents/:id/:tab", path))) return <AgentPage id={m.id ?? ""} tab={m.tab ?? "overview"} />;
  if ((m = match("/agents/:id", path))) return <AgentPage id={m.id ?? ""} tab="overview" />;
  if (path === "/secrets") return <SecretsPage />;
  if (path === "/connections") return <ConnectionsPage />;
  return (
    <section>
      <h1>Not found</h1>
      <p className="empty">
        No page at <code>{path}</code>. Go to the <Link href="/">organisations</Link>.
      </p>
    </section>
  );
}

export function App() {
  const { path } = useLocation();
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <Link href="/" className="brand">
          warren
        </Link>
        <nav aria-label="main">
          <Link href="/" aria-current={path === "/" || path.startsWith("/orgs") ? "page" : undefined}>
            Organisations
          </Link>
          <Link href="/secrets" aria-current={path === "/secrets" ? "page" : undefined}>
            Secrets
          </Link>
          <Link href="/connections" aria-current={path === "/connections" ? "page" : undefined}>
            Connections
          </Link>
        </nav>
        <Account />
      </header>
      <main id="main" tabIndex={-1}>
        <SignedIn>
          <Page />
        </SignedIn>
      </main>
    </>
  );
}
