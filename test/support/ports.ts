export { freePort } from '../../api/listen.js';
