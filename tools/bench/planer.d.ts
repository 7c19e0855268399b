/** The one function of npm `planer` the reply-accuracy benchmark calls (the package ships no types). */
declare module "planer" {
  const planer: { extractFrom(body: string, contentType: string, dom?: unknown): string };
  export default planer;
}
