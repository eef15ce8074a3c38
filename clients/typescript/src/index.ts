export * from "./client";
export * from "./binary";
export type * from "./protocol";
