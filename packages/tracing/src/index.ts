export * from './b3-propagator.js';
export * from './propagators.js';
