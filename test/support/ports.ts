// Ports for what the tests start. A server of ours listens on port 0 and says which port it got;
// a program that must be told its port ahead (kube-apiserver, etcd, slapd, PostgreSQL…) gets one
// from freePort, and another process of the machine may take that port before the program binds
// it (the suite runs beside other work): onFreePorts starts it again on new ones. They live in
// api/listen.ts, since make box (operator/run-box.ts) picks ports the same way.
export { freePort, freePorts, onFreePorts, portTaken } from '../../api/listen.js';
