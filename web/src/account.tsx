// Who is signed in, for AUTH_MODE=oidc: the header shows the person's email and Sign out; a
// browser with no session sees a Sign in page (the provider's login, then back to the page it
// was on) instead of pages whose every request would be refused. Other identity modes have
// no sign-in: nothing is shown.
import { useQuery } from "@tanstack/react-query";
import { useState, type ReactNode } from "react";
import { Action } from "./ui";

interface Me {
  email: string;
  auth_mode: string;
}

/** The caller (200), or null when the server asks for a sign-in (401). */
async function whoAmI(): Promise<Me | null> {
  const r = await fetch("/api/auth/me", { headers: { accept: "application/json" } });
  if (r.status === 401) return null;
  if (!r.ok) throw new Error(`GET /api/auth/me answered ${r.status}`);
  return (await r.json()) as Me;
}

const useMe = () => useQuery({ queryKey: ["me"], queryFn: whoAmI, staleTime: 60_000 });

const signInHref = () =>
  `/auth/login?return_to=${encodeURIComponent(window.location.pathname + window.location.search)}`;

/** The header's part: the signed-in person and Sign out (oidc only). */
export function Account() {
  const me = useMe();
  const [busy, setBusy] = useState(false);
  if (me.data?.auth_mode !== "oidc") return null;
  const signOut = async () => {
    setBusy(true);
    await fetch("/auth/logout", { method: "POST" });
    window.location.assign("/");
  };
  return (
    <div className="account" aria-label="account">
      <span data-testid="signed-in-as">{me.data.email}</span>
      <Action type="button" busy={busy} busyLabel="Signing out…" onClick={() => void signOut()}>
        Sign out
      </Action>
    </div>
  );
}

/** The page, or the Sign in page when the server wants a sign-in first. */
export function SignedIn({ children }: { children: ReactNode }) {
  const me = useMe();
  if (me.data !== null) return <>{children}</>;
  return (
    <section>
      <h1>Sign in</h1>
      <p>This warren signs people in with the organisation's identity provider.</p>
      <p>
        <a href={signInHref()}>Sign in</a>
      </p>
    </section>
  );
}
