// swagger-ui-dist's files, bundled as text by the wrangler.toml rule of the same names (src/swagger-ui.ts).
declare module "swagger-ui-dist/swagger-ui-bundle.js" {
  const text: string;
  export default text;
}
declare module "swagger-ui-dist/swagger-ui.css" {
  const text: string;
  export default text;
}
// Tests read project files as text through Vite's ?raw suffix.
declare module "*?raw" {
  const text: string;
  export default text;
}
