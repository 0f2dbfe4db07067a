// The operator app: one page, its own router, TanStack Query over the SDK.
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App";
import "./styles.css";

const queries = new QueryClient({
  defaultOptions: {
    // The SDK already tries idempotent calls again; an API error is an answer, not a reason to retry.
    queries: { retry: false, refetchOnWindowFocus: false, staleTime: 2000 },
  },
});

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <QueryClientProvider client={queries}>
        <App />
      </QueryClientProvider>
    </StrictMode>,
  );
}
