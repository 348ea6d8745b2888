export * from './schema.js';
export * from './parse.js';
export * from './settings-doc.js';
export * from './secret.js';
