/**
 * "The feed a client gets": a release's feed as one client would get it, anonymous or as a chosen license, for a
 * chosen platform. It calls the canonical feed route itself (with the license's user key in X-Service-User-Key, as
 * an auto-updater sends it) and shows the status with the X-Service-Reason in words, so an operator can tell "no
 * update" from a refused or mistyped key. A licensed preview is a real update check of that license: it is traced and
 * a gated release's URLs carry fresh download tokens.
 */
import { useState } from "preact/hooks";
import { call } from "./api/client";
import { UPDATE_REASONS, type UpdateReason } from "../../src/delivery/reason-words";
import { ErrorBox, useAction } from "./ui";

const PLATFORMS = ["win-x64", "win-arm64", "darwin-arm64", "darwin-x64", "linux-x64", "linux-arm64"];

/** The manifest an auto-updater asks for on a platform (SPEC "Feed"). */
function feedFile(platform: string): string {
  if (platform.startsWith("win")) return "latest.yml";
  if (platform.startsWith("darwin")) return "latest-mac.yml";
  return platform === "linux-arm64" ? "latest-linux-arm64.yml" : "latest-linux.yml";
}

interface Candidate {
  licenseId: string;
  userKey: string;
  licenseeName?: string | null;
  edition?: string | null;
}

/** The reason header in words; unknown names shown as they are. */
export function reasonInWords(reason: string | null): string {
  if (!reason) return "";
  const words = (UPDATE_REASONS as Record<string, string>)[reason as UpdateReason];
  return words ? `${reason}: ${words}` : reason;
}

/** Text for the filter language's string literal: no quote or backslash can close it. */
const literal = (text: string) => JSON.stringify(text.replace(/["\\]/g, ""));

export function FeedPreview(props: { productId: number; productCode: string; channel: string }) {
  const [search, setSearch] = useState("");
  const [candidates, setCandidates] = useState<Candidate[]>();
  const [chosen, setChosen] = useState<Candidate>();
  const [platform, setPlatform] = useState("win-x64");
  const [answer, setAnswer] = useState<{ title: string; reason: string; body: string }>();
  const action = useAction();

  const find = () =>
    action.run(async () => {
      const text = search.trim();
      const key = text.toUpperCase();
      const name = text.toLowerCase();
      const filter = [
        `productId == ${props.productId}`,
        text
          ? `(userKey.Contains(${literal(key)}) || licenseId.Contains(${literal(key)}) || ` +
            `licenseeName.ToLower().Contains(${literal(name)}) || licenseeCompany.ToLower().Contains(${literal(name)}))`
          : "",
      ]
        .filter(Boolean)
        .join(" && ");
      const res = await call<{ licenses: Candidate[] }>("GET", "/v1/licenses", {
        query: { filter, select: "licenseId,userKey,licenseeName,edition", take: 10 },
      });
      setCandidates(res.licenses);
    });

  const preview = () =>
    action.run(async () => {
      const file = feedFile(platform);
      const path = `/v1/updates/${encodeURIComponent(props.productCode)}/feed/${props.channel}/${platform}/${file}`;
      // no-store: the browser's cache keeps the anonymous answer (public, max-age) under the same URL.
      const res = await fetch(path, {
        cache: "no-store",
        headers: chosen ? { "X-Service-User-Key": chosen.userKey } : {},
      });
      const who = chosen ? `as ${chosen.licenseId}` : "anonymous";
      setAnswer({
        title: `GET ${props.channel}/${platform}/${file} ${who}: HTTP ${res.status}${res.status === 204 ? " (nothing to install)" : ""}`,
        reason: reasonInWords(res.headers.get("X-Service-Reason")),
        body: await res.text(),
      });
    });

  return (
    <section class="card" aria-label="Feed">
      <h3>The feed a client gets</h3>
      <div class="grid">
        <div class="field">
          <label for="feed-search">License (key, id or licensee)</label>
          <input
            id="feed-search"
            value={search}
            onInput={(e) => setSearch(e.currentTarget.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter") {
                e.preventDefault();
                void find();
              }
            }}
          />
        </div>
        <div class="field">
          <label for="feed-license">Preview as</label>
          <select
            id="feed-license"
            value={chosen?.licenseId ?? ""}
            onChange={(e) => setChosen(candidates?.find((l) => l.licenseId === e.currentTarget.value))}
          >
            <option value="">anonymous (no user key)</option>
            {(candidates ?? []).map((l) => (
              <option value={l.licenseId}>
                {[l.licenseId, l.licenseeName, l.edition].filter(Boolean).join(" · ")}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="feed-platform">Platform</label>
          <select id="feed-platform" value={platform} onChange={(e) => setPlatform(e.currentTarget.value)}>
            {PLATFORMS.map((p) => (
              <option>{p}</option>
            ))}
          </select>
        </div>
      </div>
      <div class="actions">
        <button type="button" onClick={() => void find()} disabled={action.busy}>
          Find licenses
        </button>
        <button type="button" class="primary" onClick={() => void preview()} disabled={action.busy}>
          Preview the feed
        </button>
      </div>
      {candidates && candidates.length === 0 ? <p>No license of this product matches.</p> : null}
      <ErrorBox error={action.error} />
      {answer ? (
        <div role="status" aria-label="Feed answer">
          <p>
            <strong>{answer.title}</strong>
          </p>
          {answer.reason ? <p class="reason">Reason: {answer.reason}</p> : null}
          {answer.body ? <pre class="feed">{answer.body}</pre> : null}
        </div>
      ) : null}
    </section>
  );
}
