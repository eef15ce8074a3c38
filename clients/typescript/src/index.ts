export * from "./client";
export type * from "./protocol";
