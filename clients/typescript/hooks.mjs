// Lets Node run the client package's TypeScript sources directly: they import their siblings as `./x.js` (what tsc
// emits), so a relative `.js` import from a `.ts` module that has no such file resolves to the `.ts` beside it.
import { existsSync } from "node:fs";
import { registerHooks } from "node:module";
import { fileURLToPath } from "node:url";

registerHooks({
  resolve(specifier, context, nextResolve) {
    if (specifier.startsWith(".") && specifier.endsWith(".js") && context.parentURL?.endsWith(".ts")) {
      const url = new URL(specifier, context.parentURL);
      if (!existsSync(fileURLToPath(url))) return nextResolve(specifier.replace(/\.js$/, ".ts"), context);
    }
    return nextResolve(specifier, context);
  },
});
