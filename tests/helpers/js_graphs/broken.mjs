export const graph = (;
