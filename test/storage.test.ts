/**
 * The storage reader the download route streams from (src/updates/storage.ts), for both storages: the whole file,
 * spans at and across 1 MiB chunk boundaries, the last byte, single bytes, and missing bytes.
 */
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it } from "vitest";
import { getDb } from "../src/db/client";
import { releaseDownloads } from "../src/db/schema";
import {
  CHUNK_BYTES,
  type ReleaseDownloadRow,
  artifactExists,
  deleteArtifactBytes,
  readArtifact,
} from "../src/updates/storage";
import { MiB, bytesOf, newRelease, upload } from "./artifacts-kit";
import { admin } from "./helpers";

const db = getDb(env.DB);
const SIZE = 2 * MiB + 17; // three chunks, the last one short
const bytes = bytesOf(SIZE, 99);
const rows: Record<string, ReleaseDownloadRow> = {};

async function rowOf(id: number): Promise<ReleaseDownloadRow> {
  return (await db.select().from(releaseDownloads).where(eq(releaseDownloads.id, id)).get())!;
}

async function collect(stream: ReadableStream<Uint8Array> | undefined): Promise<Uint8Array> {
  expect(stream).toBeDefined();
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

beforeAll(async () => {
  const r = await newRelease();
  for (const [sourceKind, kind] of [
    ["local", "installer"],
    ["resource", "zip"],
  ] as const) {
    const res = await upload(r.path, bytes, { sourceKind, kind });
    expect(res.status, res.text).toBe(201);
    rows[sourceKind] = await rowOf(res.body["releaseDownloadId"]);
  }
  const hosted = await admin("POST", r.path, {
    releaseDownload: {
      platform: "linux-x64",
      kind: "installer",
      fileName: "a",
      url: "https://cdn.example.com/a",
      size: 1,
      sha256: "0".repeat(64),
      sha512: `${"A".repeat(86)}==`,
    },
  });
  rows["url"] = await rowOf(hosted.body["releaseDownloadId"]);
});

const spans: [string, number, number][] = [
  ["the first byte", 0, 0],
  ["the last byte", SIZE - 1, SIZE - 1],
  ["the last byte of the first chunk", CHUNK_BYTES - 1, CHUNK_BYTES - 1],
  ["the first byte of the second chunk", CHUNK_BYTES, CHUNK_BYTES],
  ["two bytes across a chunk boundary", CHUNK_BYTES - 1, CHUNK_BYTES],
  ["exactly the second chunk", CHUNK_BYTES, 2 * CHUNK_BYTES - 1],
  ["all three chunks but their outer bytes", 1, SIZE - 2],
  ["the short last chunk", 2 * CHUNK_BYTES, SIZE - 1],
  ["a span inside one chunk", 1000, 1999],
];

describe.each(["local", "resource"])("%s artifacts", (sourceKind) => {
  it("stream the whole file", async () => {
    expect(await collect(await readArtifact(env, db, rows[sourceKind]!))).toEqual(bytes);
  });

  it.each(spans)("stream %s", async (_name, start, end) => {
    const got = await collect(await readArtifact(env, db, rows[sourceKind]!, { start, end }));
    expect(got.byteLength).toBe(end - start + 1);
    expect(got).toEqual(bytes.slice(start, end + 1));
  });

  it("refuse a span outside the file", async () => {
    await expect(readArtifact(env, db, rows[sourceKind]!, { start: 0, end: SIZE })).rejects.toThrow(RangeError);
    await expect(readArtifact(env, db, rows[sourceKind]!, { start: 5, end: 4 })).rejects.toThrow(RangeError);
  });

  it("exist until their bytes are deleted; then read as undefined", async () => {
    const row = rows[sourceKind]!;
    expect(await artifactExists(env, db, row)).toBe(true);
    const copy = { ...row };
    await deleteArtifactBytes(env, db, [copy]);
    expect(await artifactExists(env, db, copy)).toBe(false);
    expect(await readArtifact(env, db, copy)).toBeUndefined();
    expect(await readArtifact(env, db, copy, { start: CHUNK_BYTES, end: CHUNK_BYTES + 1 })).toBeUndefined();
  });
});

describe("resource chunks", () => {
  it("are read as the consumer pulls: cancelling after the first chunk reads no more", async () => {
    const r = await newRelease();
    const res = await upload(r.path, bytes, { sourceKind: "resource" });
    const row = await rowOf(res.body["releaseDownloadId"]);
    const reader = (await readArtifact(env, db, row))!.getReader();
    const first = await reader.read();
    expect(first.value!.byteLength).toBe(CHUNK_BYTES);
    // Chunk 1 vanishes after the first read: a stream that had read ahead would not notice.
    await env.DB.prepare("DELETE FROM artifact_chunks WHERE download_id = ? AND seq = 1").bind(row.id).run();
    await expect(reader.read()).rejects.toThrow(/Chunk 1 .* is missing/);
  });
});

describe("hosted artifacts", () => {
  it("have no stored bytes", async () => {
    expect(await artifactExists(env, db, rows["url"]!)).toBe(false);
    expect(await readArtifact(env, db, rows["url"]!)).toBeUndefined();
  });
});
