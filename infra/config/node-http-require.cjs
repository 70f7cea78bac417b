// What a function bundle's imports of `node:http` resolve to (bundling-config.ts): the built-in
// module object, whose exports are read when used. Node's ESM wrapper of `node:http` reads every
// export at import, and the WebSocket getters among them load undici, Node's fetch
// implementation: 15 to 30 ms of a cold start that no function here uses
// (https://github.com/nodejs/node/issues/57649).
// Not `require('node:http')`: the bundler's alias rewrites that too, and the file would require
// itself and export `{}` (test/unit/bundling-config.test.ts). process.getBuiltinModule is no import.
module.exports = process.getBuiltinModule('node:http')
