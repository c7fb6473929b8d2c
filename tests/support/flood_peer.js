// A handler peer that writes 1 MiB without a newline to jetfan's socket, then ends its side, and
// exits 0 only if it read jetfan's ERR before the connection closed. Node's sockets give up on a
// failed write (EPIPE) and drop what was not yet read, so a jetfan that closes while the peer is
// still writing makes this fail.
//   node flood_peer.js SOCKET
const net = require('net');

const socket = net.createConnection(process.argv[2]);
let received = '';
socket.on('data', (chunk) => {
  received += chunk.toString();
});
socket.on('error', (error) => {
  console.log(`FAILED: ${error.code} before the ERR was read; read ${JSON.stringify(received.slice(0, 80))}`);
  process.exit(1);
});
socket.on('close', () => {
  const ok = received.startsWith('ERR ');
  console.log(`${ok ? 'ok' : 'FAILED'}: read ${JSON.stringify(received.slice(0, 80))} before the close`);
  process.exit(ok ? 0 : 1);
});
socket.on('connect', () => {
  socket.write(Buffer.alloc(1024 * 1024, 'A'));
  socket.end();
});
