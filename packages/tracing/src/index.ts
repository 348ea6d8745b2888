export * from './b3-propagator.js';
export * from './propagators.js';
export * from './shutdown.js';
export * from './spans.js';
export * from './settings.js';
export * from './provider.js';
