/**
 * The piscina task entry. The front runs one `attach` task per worker that
 * lasts the worker's lifetime: it hands the worker a MessagePort, and every
 * request afterwards is a frame on that port rather than a piscina task
 * (a persistent port costs one postMessage per batch; a task per request
 * costs a task round trip and a channel set-up). Piscina still owns the
 * threads: it starts them, and replaces one that dies.
 */
import { parentPort, threadId } from 'node:worker_threads';
import { FramePort } from '../protocol/frame-port.js';
import { PROTOCOL_VERSION, type AttachTask, type FromWorker, type ToWorker, type WorkerHello } from '../protocol/frames.js';
import { RingReader, RingWriter } from '../protocol/shared-ring.js';
import { WorkerSession } from './session.js';

export default function attach(task: AttachTask): Promise<void> {
  if (task.protocol !== PROTOCOL_VERSION) {
    throw new Error(`protocol mismatch: front speaks ${task.protocol}, worker speaks ${PROTOCOL_VERSION}`);
  }
  const rings = { lendInto: new RingWriter(task.replies), borrowFrom: new RingReader(task.calls) };
  new WorkerSession((onFrame) => new FramePort<ToWorker, FromWorker>(task.port, onFrame, rings), task.routing, task.state);
  const hello: WorkerHello = { t: 'switchyard.hello', worker: task.state.worker, thread: threadId };
  parentPort?.postMessage(hello);
  // The task lasts as long as the port: the front closes it when the pool closes.
  return new Promise((resolve) => task.port.once('close', () => resolve()));
}
