// sandgate-node-flags:
//
// sandgate's persistent JavaScript interpreter ("driver"), protocol v1 (docs/architecture.md,
// "Persistent interpreters"): runs notebook cells sent on fd 3 in one global context and
// answers each with a 16-byte reply on fd 4. Run as `/usr/bin/node -e <this source>` inside the
// sandbox, as its unprivileged uid; uses only node core (v20). The gateway trusts nothing it
// writes.
//
// How it works, and why:
// - Cells are evaluated by the in-process inspector (Runtime.evaluate with replMode), the
//   DevTools console's mode: top-level let/const/class persist and a later cell may declare
//   them again, top-level await works, and the completion value is returned.
// - SIGINT: node's SIGINT watchdog (the one behind vm's breakOnSigint) is started once and never
//   stopped, so it owns SIGINT for the driver's whole life. With no vm script running it only
//   records a "pending" flag, which is how SIGINT is ignored between cells. While a cell's
//   synchronous part runs inside a breakOnSigint vm script, SIGINT terminates it; while the
//   cell awaits, a 10 ms poll of the pending flag ends it. (Starting and stopping the watchdog
//   per cell, like node's REPL does, leaves SIGINT on its default action for a moment after
//   each run: a SIGINT then would kill the driver.)
//   Limits: code that runs after an await, or in a timer or callback, runs outside that vm
//   script and cannot be stopped (terminating node's own callback machinery makes node abort);
//   a SIGINT during it counts once it yields, and one that never yields is the gateway's to
//   kill after its grace period. A cell's own process.on('SIGINT') listeners never run.
// - fds 3 and 4 stay where they are: node's start-up (uv_disable_stdio_inheritance) has made
//   every inherited descriptor close-on-exec, so no subprocess gets them. Moving them would
//   need dup(), which node lacks (and reopening /proc/self/fd/N is refused for pipes that
//   another uid, the gateway, created). Code in the driver's own process can still use them;
//   the gateway trusts nothing the driver writes anyway.
// - process.stdout and process.stderr write synchronously (fs.writeSync on fds 1 and 2) and
//   keep no state between writes: every byte is in the pipe when write() returns (so before a
//   reply, and at process.exit()), a printing loop cannot pile output up in memory, and a
//   SIGINT that terminates the cell in the middle of a console.log cannot leave the stream
//   half-updated (node's own pipe streams then stay stuck with a write "in progress").
'use strict';
(() => {
  // What the driver uses, captured now: a cell may declare or assign the same global names
  // (`let process`, `var setImmediate`), and those would be what the driver's code sees.
  const { process, Buffer, setImmediate, setInterval, clearInterval, queueMicrotask, Atomics,
          BigInt, Error, Number, String } = globalThis;
  const fs = require('fs');
  const { writeSync, openSync, closeSync, unlinkSync } = fs;
  const net = require('net');
  const os = require('os');
  const path = require('path');
  const util = require('util');
  const vm = require('vm');
  const inspector = require('inspector');
  const { Readable, Writable } = require('stream');

  const REQUEST_MAGIC = 0x51524753;  // "SGRQ"
  const REPLY_MAGIC = 0x50524753;    // "SGRP"
  const FINISHED = 0, INTERRUPTED = 1;

  // --- stdout and stderr ----------------------------------------------------------------------
  const pause = new Int32Array(new SharedArrayBuffer(4));
  function writeAll(fd, chunk, encoding) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk;
    for (let done = 0; done < bytes.length;) {
      try {
        done += writeSync(fd, bytes, done, bytes.length - done);
      } catch (e) {
        if (e.code === 'EAGAIN') Atomics.wait(pause, 0, 0, 1);  // someone made it non-blocking
        else if (e.code !== 'EINTR') throw e;
      }
    }
  }
  // Write callbacks run on the next tick, as streams promise. Consecutive ones that are the
  // same function (console.log passes one per stream) share an entry, so a printing loop does
  // not queue one per line.
  let callbacks = null;
  function callLater(callback) {
    if (callbacks === null) {
      process.nextTick(() => {
        const due = callbacks;
        callbacks = null;
        if (due) for (const [f, n] of due) for (let i = 0; i < n; i++) f(null);
      });
      callbacks = [];
    }
    const last = callbacks[callbacks.length - 1];
    if (last && last[0] === callback) last[1]++;
    else callbacks.push([callback, 1]);
  }
  class SyncWriter extends Writable {
    constructor(fd) {
      super();
      this.fd = fd;
    }
    write(chunk, encoding, callback) {
      if (typeof encoding === 'function') [callback, encoding] = [encoding, undefined];
      writeAll(this.fd, chunk, encoding);
      if (typeof callback === 'function') callLater(callback);
      return true;
    }
    _write(chunk, encoding, callback) {  // for end(chunk)
      writeAll(this.fd, chunk);
      callback();
    }
  }
  // Before anything uses them: the global console binds to process.stdout on first use.
  const out = new SyncWriter(1), err = new SyncWriter(2);
  for (const [name, stream] of [['stdout', out], ['stderr', err]])
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: true,
      get: () => stream,
    });

  // --- SIGINT -------------------------------------------------------------------------------
  const contextify = process.binding('contextify');
  // A JS listener first: with none, process.kill(process.pid, 'SIGINT') in a cell assumes the
  // process dies and runs node's at-exit hooks, which destroy the inspector's context. The
  // watchdog, started next, replaces the listener's OS handler, so the listener never runs.
  const ignoreSigint = () => {};
  process.on('SIGINT', ignoreSigint);
  contextify.startSigintWatchdog();
  // A cell that removed the listener (process.removeAllListeners('SIGINT')) made node put
  // SIGINT back to its default action or give it to another listener: take it back.
  function keepSigint() {
    if (process.listeners('SIGINT').includes(ignoreSigint)) return;
    process.on('SIGINT', ignoreSigint);
    contextify.stopSigintWatchdog();  // the last stop: it lets go of SIGINT...
    contextify.startSigintWatchdog();  // ...to take it again
  }
  // Returns whether a SIGINT arrived since the last call, and forgets it. A nested start/stop
  // pair only reads and clears the flag: the watchdog stays installed.
  function takePendingSigint() {
    contextify.startSigintWatchdog();
    return contextify.stopSigintWatchdog();
  }

  // --- errors that escape a cell (timers, callbacks, rejected promises nobody awaited) ------
  const isError = (v) => v instanceof Error || util.types.isNativeError(v);
  // The stack of an error thrown by cell code continues into the driver (the inspector call
  // and below); cut those frames.
  function withoutDriverFrames(text) {
    const lines = text.split('\n');
    const first = lines.findIndex((l) => /^\s+at Session\.post \(node:inspector:/.test(l));
    if (first < 0) return text;
    let end = first;
    while (end < lines.length && /^\s+at /.test(lines[end])) end++;
    lines.splice(first, end - first);
    return lines.join('\n');
  }
  function describe(value) {
    try {
      return withoutDriverFrames(util.inspect(value));
    } catch (e) {
      return `<value that cannot be shown: ${e && e.message}>`;
    }
  }
  process.on('uncaughtException', (e) => err.write(`Uncaught ${describe(e)}\n`));
  process.on('unhandledRejection', (e) => err.write(`Uncaught (in promise) ${describe(e)}\n`));

  // --- stdin ----------------------------------------------------------------------------------
  // process.stdin is a fresh stream of the cell's stdin. fd 0 also holds it (an unlinked file
  // in TMPDIR, or /dev/null when empty) so fs.readFileSync(0) and /dev/stdin work too.
  let stdinData = Buffer.alloc(0), stdinStream = null, fd0Holds = true;  // fd 0 starts as /dev/null
  const stdinPath = path.join(os.tmpdir(), `.sandgate-stdin-${process.pid}`);
  Object.defineProperty(process, 'stdin', {
    configurable: true,
    enumerable: true,
    get() {
      if (!stdinStream) {
        const data = stdinData;
        stdinStream = new Readable({
          read() {
            if (data.length) this.push(data);
            this.push(null);
          },
        });
        if (fd0Holds) stdinStream.fd = 0;
      }
      return stdinStream;
    },
  });
  function setStdin(data) {
    const unchanged = fd0Holds && stdinData.length === 0 && data.length === 0;
    stdinData = data;
    stdinStream = null;
    if (!unchanged) fd0Holds = putAtFd0(data);
  }
  // Opening takes the lowest free descriptor: 0, once closed. False when fd 0 could not be
  // made to hold `data` (it is then /dev/null if possible).
  function putAtFd0(data) {
    try {
      closeSync(0);
    } catch {}
    let fd = -1, complete = false;
    try {
      if (data.length) {
        try {
          unlinkSync(stdinPath);
        } catch {}
        fd = openSync(stdinPath, 'wx+', 0o600);
        unlinkSync(stdinPath);
        writeSync(fd, data, 0, data.length, 0);  // positional: the offset stays at 0
      } else {
        fd = openSync('/dev/null', 'r');
      }
      complete = true;
    } catch {}
    if (fd === 0 && complete) return true;
    try {
      if (fd >= 0) closeSync(fd);
      const other = openSync('/dev/null', 'r');  // keep fd 0 taken, at least
      if (other !== 0) closeSync(other);
    } catch {}
    return false;
  }

  // --- the inspector --------------------------------------------------------------------------
  const session = new inspector.Session();
  session.connect();
  // Methods that run no user promise answer synchronously, inside post().
  function post(method, params) {
    let answered = false, error, result;
    session.post(method, params, (e, r) => {
      answered = true;
      error = e;
      result = r;
    });
    if (!answered) throw new Error(`the inspector did not answer ${method} at once`);
    if (error) throw error;
    return result;
  }
  // A remote object's id -> the value itself: callFunctionOn hands it to `take`, whose own
  // remote id is fetched once through a global property that is then deleted.
  let taken;
  globalThis['sandgate take'] = (v) => {
    taken = v;
  };
  const takeId = post('Runtime.evaluate', {
    expression: "this['sandgate take']",
    objectGroup: 'sandgate-driver',  // never released
  }).result.objectId;
  delete globalThis['sandgate take'];
  function localValue(remote) {
    if (remote.objectId) {
      post('Runtime.callFunctionOn', {
        objectId: remote.objectId,
        functionDeclaration: "function (take) { 'use strict'; take(this); }",
        arguments: [{ objectId: takeId }],
      });
      const value = taken;
      taken = undefined;
      return value;
    }
    if ('unserializableValue' in remote) {  // NaN, -0, ±Infinity, 12n
      const u = remote.unserializableValue;
      return remote.type === 'bigint' ? BigInt(u.slice(0, -1)) : Number(u);
    }
    return remote.value;  // undefined for type "undefined"
  }

  // --- cells ------------------------------------------------------------------------------------
  let cell = null;  // the running cell: { seq, code, done, poll }
  // The evaluation is started from inside a vm script so that breakOnSigint covers the cell's
  // synchronous part; termination is turned back into an exception at the script's boundary.
  // The script reaches the driver through a property of the global object (`this`, which no
  // declaration can shadow) that cannot be changed or deleted.
  Object.defineProperty(globalThis, 'sandgate evaluate', {
    value: () => {
      const c = cell;
      session.post('Runtime.evaluate', {
        expression: `${c.code}\n//# sourceURL=cell${c.seq}`,
        replMode: true,
        objectGroup: 'sandgate',
      }, (e, result) => queueMicrotask(() => settle(c, e, result)));
    },
  });
  const evaluateScript = new vm.Script("this['sandgate evaluate']()",
                                       { filename: 'sandgate-driver' });
  // Script.prototype.runInThisContext, when SIGINT has JS listeners (ours), removes them for
  // the run and adds them back: SIGINT is then deadly during the run and the watchdog loses it
  // afterwards. Its native base method does the same run without that.
  const runNative = Object.getPrototypeOf(vm.Script.prototype).runInContext;
  // (this context, no timeout, displayErrors, breakOnSigint, breakOnFirstLine)
  const runEvaluateScript = () => runNative.call(evaluateScript, null, -1, true, true, false);

  function startCell(seq, code, stdin) {
    const c = cell = { seq, code, done: false, poll: null };
    setStdin(stdin);
    keepSigint();
    takePendingSigint();  // one that came before this cell is not for it
    try {
      runEvaluateScript();
    } catch (e) {
      if (e && e.code === 'ERR_SCRIPT_EXECUTION_INTERRUPTED') return finish(c, INTERRUPTED, 0);
      err.write(`sandgate driver: ${describe(e)}\n`);
      return finish(c, FINISHED, 1);
    }
    // The cell awaits. A SIGINT now only sets the watchdog's flag, seen by this poll. Code that
    // runs after an await (or in a timer) runs outside the vm script and cannot be terminated:
    // terminating node's own callback machinery corrupts it (node aborts: "async hook stack
    // has become corrupted"); a SIGINT during it counts once it yields (see settle).
    if (!c.done) {
      c.poll = setInterval(() => {
        if (contextify.watchdogHasPendingSigint()) finish(c, INTERRUPTED, 0);
      }, 10);
    }
  }

  // The cell's evaluation is over (a stale one, interrupted before, is ignored).
  function settle(c, protocolError, result) {
    if (c !== cell || c.done) return;
    // A SIGINT that came while code after an await ran (see startCell) still counts.
    if (contextify.watchdogHasPendingSigint()) return finish(c, INTERRUPTED, 0);
    let failed = true;
    const release = !protocolError && (result.exceptionDetails || result.result.objectId);
    try {
      if (protocolError) {
        err.write(`sandgate driver: ${protocolError.message}\n`);
      } else if (result.exceptionDetails) {
        err.write(`${describeException(c, result.exceptionDetails)}\n`);
      } else {
        const value = localValue(result.result);
        if (util.types.isPromise(value)) {
          // A script's last expression is often a promise (`main()`, an async arrow called at
          // once, `.catch(...)` after it): node runs it to its end before the script is over,
          // so the cell waits for it too, and shows what it resolves to.
          releaseCellObjects(release);
          value.then(
              (resolved) => {
                if (c !== cell || c.done) return;
                if (resolved !== undefined) out.write(`${describe(resolved)}\n`);
                finish(c, FINISHED, 0);
              },
              (reason) => {
                if (c !== cell || c.done) return;
                err.write(`${isError(reason) ? '' : 'Uncaught '}${describe(reason)}\n`);
                finish(c, FINISHED, 1);
              });
          return;
        }
        if (value !== undefined) out.write(`${describe(value)}\n`);
        failed = false;
      }
    } catch (e) {
      err.write(`sandgate driver: ${describe(e)}\n`);
    }
    releaseCellObjects(release);
    finish(c, FINISHED, failed ? 1 : 0);
  }

  // The inspector keeps what it handed out (and what earlier cells left) until this.
  function releaseCellObjects(release) {
    try {
      if (release) post('Runtime.releaseObjectGroup', { objectGroup: 'sandgate' });
    } catch {}
  }

  function describeException(c, details) {
    const thrown = details.exception ? localValue(details.exception) : undefined;
    if (!isError(thrown)) return `Uncaught ${describe(thrown)}`;
    if (thrown.name === 'SyntaxError') {
      // A cell that does not compile: vm.Script reports where ("cellN:line", the line, a caret).
      // It is asked only to locate the error (replMode accepts more, e.g. top-level await).
      try {
        new vm.Script(c.code, { filename: `cell${c.seq}` });
      } catch (e) {
        if (isError(e) && e.message === thrown.message)
          return String(e.stack).split('\n').filter((l) => !/^\s+at /.test(l)).join('\n');
      }
    }
    return describe(thrown);
  }

  function finish(c, kind, value) {
    if (c.done) return;
    c.done = true;
    if (c.poll) clearInterval(c.poll);
    // One turn of the event loop first: node reports the promise rejections nobody handled
    // once the microtasks have run, so those of the cell's last moments are in its output.
    // (The output needs no flushing: every write is in its pipe when it returns.)
    setImmediate(() => {
      writeReply(c.seq, kind, value);
      cell = null;
      next();
    });
  }

  // --- the gateway's pipes --------------------------------------------------------------------
  const replyFd = 4;
  const reply = Buffer.alloc(16);
  function writeReply(seq, kind, value) {
    reply.writeUInt32LE(REPLY_MAGIC, 0);
    reply.writeUInt32LE(seq, 4);
    reply.writeUInt32LE(kind, 8);
    reply.writeInt32LE(value, 12);
    for (let done = 0; done < reply.length;) {
      try {
        done += writeSync(replyFd, reply, done, reply.length - done);
      } catch (e) {
        if (e.code !== 'EAGAIN' && e.code !== 'EINTR') process.exit(0);  // the gateway is gone
      }
    }
  }

  const queue = [];
  let chunks = [], buffered = 0, requestsEnded = false;
  function onRequestBytes(chunk) {
    chunks.push(chunk);
    buffered += chunk.length;
    while (buffered >= 16) {
      if (chunks[0].length < 16) chunks = [Buffer.concat(chunks, buffered)];
      const head = chunks[0];
      if (head.readUInt32LE(0) !== REQUEST_MAGIC) {
        err.write('sandgate driver: a request without the request magic\n');
        process.exit(2);
      }
      const codeLength = head.readUInt32LE(8), total = 16 + codeLength + head.readUInt32LE(12);
      if (buffered < total) break;
      const all = chunks.length === 1 ? head : Buffer.concat(chunks, buffered);
      queue.push({
        seq: all.readUInt32LE(4),
        code: all.toString('utf8', 16, 16 + codeLength),
        stdin: Buffer.from(all.subarray(16 + codeLength, total)),
      });
      chunks = buffered > total ? [all.subarray(total)] : [];
      buffered -= total;
    }
    next();
  }
  function next() {
    if (cell) return;
    if (queue.length) {
      const r = queue.shift();
      startCell(r.seq, r.code, r.stdin);
    } else if (requestsEnded) {
      process.exit(0);
    }
  }
  const requests = new net.Socket({ fd: 3, readable: true, writable: false });
  const ended = () => {
    requestsEnded = true;
    next();
  };
  requests.on('data', onRequestBytes);
  requests.on('end', ended);
  requests.on('error', ended);
})();
