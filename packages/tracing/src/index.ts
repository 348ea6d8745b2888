export * from './b3-propagator.js';
export * from './propagators.js';
export * from './shutdown.js';
