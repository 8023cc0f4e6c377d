export { freePort } from '../../api/http/listen.js';
