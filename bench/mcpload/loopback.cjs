// Preloaded (node --require) into the reference TypeScript server by mcpload.
// server-everything listens on every interface and has no host option; the
// load run must stay on loopback, so a listen(port) without a host is bound
// to 127.0.0.1 here.
"use strict";
const net = require("node:net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const isPort = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (isPort && typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  return listen.apply(this, args);
};
