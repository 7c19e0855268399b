/**
 * The stored shape of a route pipeline (docs/routing.md § Pipelines): `{steps: [{name, args}]}`, as the
 * `routes.pipeline` and `events.route_snapshot` columns hold it. Declared here, below both `db/` and
 * `routing/`, so the schema and the step registry name one type. Types only: what a step name means and
 * which args it takes belongs to `routing/steps/`.
 */

/** One pipeline step as stored: a step name and its arguments (an object, checked by that step). */
export interface PipelineStep {
  name: string;
  args: Record<string, unknown>;
}

/** A route pipeline as stored: transform steps, then exactly one `map.*` step, last. */
export interface Pipeline {
  steps: PipelineStep[];
}
