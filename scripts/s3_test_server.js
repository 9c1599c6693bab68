// Starts the S3 test server (s3rver, installed by scripts/install-deps.sh into
// .deps/s3rver) on 127.0.0.1 and prints "listening 127.0.0.1:PORT" once it
// accepts requests. Used by the C++ tests, the interop tests and bench/.
//
//   node --openssl-legacy-provider scripts/s3_test_server.js \
//       --dir DIR [--port 0] [--bucket NAME]... [--exit-on-stdin-eof]
//
// Credentials: access key S3RVER, secret S3RVER (s3rver's built-in account);
// requests are checked against AWS Signature V4.
//
// --openssl-legacy-provider: s3rver encrypts ListObjectsV2 continuation
// tokens with DES, which OpenSSL 3 only has in its legacy provider; without it
// every truncated listing fails with 500.
//
// --exit-on-stdin-eof: exit when stdin closes, so that a test process that
// dies without stopping the server does not leave it running.
'use strict';

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const { pipeline, Transform } = require('stream');

const args = process.argv.slice(2);
let dir = null;
let port = 0;
let watchStdin = false;
const buckets = [];
for (let i = 0; i < args.length; i++) {
  switch (args[i]) {
    case '--dir': dir = args[++i]; break;
    case '--port': port = Number(args[++i]); break;
    case '--bucket': buckets.push(args[++i]); break;
    case '--exit-on-stdin-eof': watchStdin = true; break;
    default:
      console.error(`s3_test_server.js: unknown argument ${args[i]}`);
      process.exit(2);
  }
}
if (!dir) {
  console.error('s3_test_server.js: --dir is required');
  process.exit(2);
}

const modules = path.join(__dirname, '..', '.deps', 's3rver', 'node_modules');
let S3rver;
let FilesystemStore;
let he;
try {
  S3rver = require(path.join(modules, '@20minutes', 's3rver'));
  FilesystemStore = require(path.join(modules, '@20minutes', 's3rver', 'lib', 'stores',
                                      'filesystem.js'));
  he = require(path.join(modules, 'he'));
} catch (e) {
  console.error(`s3_test_server.js: s3rver is not installed under ${modules}: ` +
                'run scripts/install-deps.sh');
  process.exit(3);
}

// s3rver 4.0.4 escapes XML text twice (he.escape, then fast-xml-parser's
// builder), so a key "a&b" would be listed as "a&amp;amp;b". The builder's
// escaping is enough: make he.escape the identity for this process.
he.escape = (text) => text;

// S3 replaces an object atomically: a GET sees the old value or the new one.
// s3rver 4.0.4 rewrites the object file in place and its metadata (which holds
// the Content-Length) separately, so a GET racing a PUT can return a mix.
// Give it S3's semantics: write the content to a temporary file and rename it
// over the object, and serialise GET, PUT and DELETE of one key (a GET holds
// the lock until it has read the metadata and opened the file).
let tempCounter = 0;
FilesystemStore.prototype.putContent = async function putContent(objectPath, content) {
  const temp = `${objectPath}.strata-tmp-${process.pid}-${tempCounter++}`;
  const md5 = crypto.createHash('md5');
  let size = 0;
  try {
    if (Buffer.isBuffer(content)) {
      md5.update(content);
      size = content.length;
      await fs.promises.writeFile(temp, content);
    } else {
      await new Promise((resolve, reject) => pipeline(
        content,
        new Transform({
          transform(chunk, encoding, callback) {
            md5.update(chunk, encoding);
            size += chunk.length;
            callback(null, chunk);
          },
        }),
        fs.createWriteStream(temp),
        (err) => (err ? reject(err) : resolve())));
    }
    await fs.promises.rename(temp, objectPath);
  } catch (err) {
    await fs.promises.rm(temp, { force: true });
    throw err;
  }
  return [size, md5.digest('hex')];
};

const keyLocks = new Map();  // "bucket/key" -> the promise the next holder waits for
function withKeyLock(bucket, key, fn) {
  const id = `${bucket}/${key}`;
  const previous = keyLocks.get(id) || Promise.resolve();
  let release;
  const mine = new Promise((resolve) => { release = resolve; });
  keyLocks.set(id, mine);
  return previous.then(fn).finally(() => {
    release();
    if (keyLocks.get(id) === mine) keyLocks.delete(id);
  });
}
for (const method of ['getObject', 'deleteObject']) {
  const original = FilesystemStore.prototype[method];
  FilesystemStore.prototype[method] = function locked(bucket, key, ...rest) {
    return withKeyLock(bucket, key, () => original.call(this, bucket, key, ...rest));
  };
}
const originalPutObject = FilesystemStore.prototype.putObject;
FilesystemStore.prototype.putObject = function lockedPutObject(object) {
  return withKeyLock(object.bucket, object.key, () => originalPutObject.call(this, object));
};

const server = new S3rver({
  address: '127.0.0.1',
  port,
  directory: dir,
  silent: true,
  configureBuckets: buckets.map((name) => ({ name, configs: [] })),
});
server.run().then(({ address, port: bound }) => {
  process.stdout.write(`listening ${address}:${bound}\n`);
}, (err) => {
  console.error(`s3_test_server.js: ${err.message}`);
  process.exit(1);
});

// Exit at once: close() would wait for clients' keep-alive connections.
const stop = () => process.exit(0);
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
if (watchStdin) {
  process.stdin.on('end', stop);
  process.stdin.on('error', stop);
  process.stdin.resume();
}
