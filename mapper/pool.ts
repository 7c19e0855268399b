export type MapperPool = unknown;
export type MapperPoolOptions = unknown;
export function createMapperPool(): never {
  throw new Error("todo");
}
