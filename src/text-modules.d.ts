// Tests read project files as text through Vite's ?raw suffix.
declare module "*?raw" {
  const text: string;
  export default text;
}
