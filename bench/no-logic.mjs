// A Worker with no logic of its own under workerd through Miniflare, deployed the way the service is (its
// compatibility date, and with `withAssets` the service's static assets, so the same assets-router hop): the
// benchmark's baseline, the bare Worker of the generator check and the platform floors (bench/floors.mjs) are all
// started here. `options` adds Miniflare options (bindings, a state directory).
import { Miniflare, convertV4MiniflareOptions } from "miniflare";
import { configuredWorkerOptions } from "../scripts/local-worker.mjs";

export function noLogicWorker({ script, withAssets, log, options = {} }) {
  return new Miniflare(
    convertV4MiniflareOptions({
      modules: true,
      host: "127.0.0.1",
      port: 0,
      cf: false,
      log,
      compatibilityDate: configuredWorkerOptions().compatibilityDate,
      ...(withAssets ? { assets: configuredWorkerOptions().assets } : {}),
      script,
      ...options,
    }),
  );
}
