"""Decoding a stream of frames: :func:`stream`.

:func:`stream` decodes an iterable (or async iterable) of measurement frames in
batches and yields the results in input order, never reading more than a fixed
number of frames ahead.  See ``docs/pipelines.md``.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time
from collections import deque
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from ..decoders import Decoder

__all__ = ["stream"]

_END = object()
_ERR = object()


def _check_stream_args(batch: Any, max_latency: Any, read_ahead: Any) -> tuple[int, float, int]:
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    try:
        lat = float(max_latency)
    except (TypeError, ValueError):
        raise ValueError(f"max_latency must be a number of seconds, got {max_latency!r}") from None
    if not np.isfinite(lat) or lat < 0:
        raise ValueError(f"max_latency must be finite and >= 0, got {max_latency!r}")
    ra = 2 * int(batch) if read_ahead is None else read_ahead
    if isinstance(ra, bool) or not isinstance(ra, (int, np.integer)) or ra < 1:
        raise ValueError(f"read_ahead must be a positive integer, got {read_ahead!r}")
    return int(batch), lat, int(ra)


def _first_bad_shape(dec: Decoder, frames: list[Any], first_index: int) -> ValueError | None:
    """The error for the first frame that is not one problem (M, L) of the decoder's M.

    Frames of different L are fine (each is its own problem): whether a frame is
    accepted never depends on which batch it falls in.
    """
    for j, f in enumerate(frames):
        if np.ndim(f) != 2 or np.shape(f)[0] != dec.M:
            err = ValueError(
                f"frame {first_index + j} has shape {np.shape(f)}; every frame must be one "
                f"problem (M, L) with M = {dec.M}"
            )
            err.frame = first_index + j  # type: ignore[attr-defined]
            return err
    return None


def stream(
    dec: Decoder | Callable[[np.ndarray], np.ndarray],
    frames: Iterable[Any] | AsyncIterable[Any],
    *,
    batch: int = 32,
    max_latency: float = 0.02,
    read_ahead: int | None = None,
    workers: int = 1,
) -> Iterator[np.ndarray] | AsyncIterator[np.ndarray]:
    """Decode a stream of frames in batches; yield the results in input order.

    Parameters
    ----------
    dec : Decoder
        The decoder (any callable taking (B, M, L) and returning (B, N, L)).
    frames : iterable or async iterable of ndarray (M, L)
        One problem per frame.
    batch : int, default 32
        Most frames decoded in one call.
    max_latency : float, default 0.02
        Seconds a frame may wait for others to fill its batch: a batch is
        decoded once it is full or once its first frame arrived ``max_latency``
        ago (frames already waiting then join it, up to ``batch``).
    read_ahead : int, optional
        Most frames buffered between the source and the decoder (default
        ``2 * batch``).  Back-pressure: the source is never read more than
        ``read_ahead + workers * batch + 1`` frames ahead of the results consumed.
    workers : int, default 1
        Batches decoded at the same time (synchronous sources).  With 1 the
        decoder runs in the calling thread; with more, in a pool of ``workers``
        threads (give the decoder ``n_threads=1`` then), still yielding in order.

    Returns
    -------
    iterator or async iterator of ndarray (N, L)
        An async iterator when ``frames`` is an async iterable (the decoder then
        runs in one helper thread so that the event loop stays responsive).

    Notes
    -----
    No frame is dropped: when the source raises, every frame it delivered
    before is decoded and yielded, in order, and then its exception is raised
    (for any number of ``workers``).  A frame that cannot be decoded (NaN, a
    wrong shape) does not take its batch down: the frames before it are decoded
    and yielded, then a ``ValueError`` naming the frame's index (``frame 77
    ...``) is raised; the stream ends there, as at any error.

    A synchronous source is read in one helper thread.  Closing the iterator,
    an exception or Ctrl-C (KeyboardInterrupt) stops and joins that thread;
    every result decoded before has been yielded.  (A source blocked inside its
    own ``next()`` is left to return by itself: the helper is a daemon thread.)
    """
    b, lat, ra = _check_stream_args(batch, max_latency, read_ahead)
    if not callable(dec):
        raise TypeError(f"dec must be a Decoder (callable), got {type(dec).__name__}")
    if hasattr(frames, "__aiter__"):
        return _astream(dec, frames, b, lat, ra)  # type: ignore[arg-type]
    if not hasattr(frames, "__iter__"):
        raise TypeError(f"frames must be an iterable or async iterable, got {type(frames)}")
    if isinstance(workers, bool) or not isinstance(workers, (int, np.integer)) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    return _sstream(dec, iter(frames), b, lat, ra, int(workers))  # type: ignore[arg-type]


def _put(q: queue.Queue[Any], item: Any, stop: threading.Event) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=0.05)
            return True
        except queue.Full:
            continue
    return False


def _reader(it: Iterator[Any], q: queue.Queue[Any], stop: threading.Event) -> None:
    try:
        for x in it:
            if not _put(q, (x, time.perf_counter()), stop):
                return
        _put(q, (_END, 0.0), stop)
    except BaseException as exc:  # handed to the consumer
        _put(q, (_ERR, exc), stop)


#: A decoded batch: the results of its frames up to the first bad one, and the
#: error for that frame (None when every frame was decoded).
_Decoded = tuple[list[np.ndarray], "BaseException | None"]


def _frame_error(index: int, exc: Exception) -> BaseException:
    if isinstance(exc, ValueError) and getattr(exc, "frame", None) == index:
        return exc
    if isinstance(exc, ValueError):
        err = ValueError(f"frame {index} could not be decoded: {exc}")
        err.frame = index  # type: ignore[attr-defined]
        err.__cause__ = exc
        return err
    if hasattr(exc, "add_note"):
        exc.add_note(f"(raised decoding frame {index} of the stream)")
    return exc


def _decode_frames(dec: Any, frames: list[Any], first: int) -> _Decoded:
    """Decode ``frames``: each run of equally shaped frames as one batch (:func:`_decode_run`)."""
    out: list[np.ndarray] = []
    start = 0
    while start < len(frames):
        end = start + 1
        while end < len(frames) and np.shape(frames[end]) == np.shape(frames[start]):
            end += 1
        part, err = _decode_run(dec, frames[start:end], first + start)
        out += part
        if err is not None:
            return out, err
        start = end
    return out, None


def _decode_run(dec: Any, frames: list[Any], first: int) -> _Decoded:
    """Decode ``frames`` as one batch; if that fails, one by one up to the first failure."""
    if not frames:
        return [], None
    try:
        return list(np.asarray(dec(np.stack(frames)))), None
    except Exception:  # find the frame at fault; its neighbours are decoded alone
        pass
    out: list[np.ndarray] = []
    for j, f in enumerate(frames):
        try:
            out.append(np.asarray(dec(np.stack([f])))[0])
        except Exception as exc:
            return out, _frame_error(first + j, exc)
    return out, None


def _decode_batch(dec: Any, frames: list[Any], first: int) -> _Decoded:
    """Decode a batch: every frame before the first bad one, and that frame's error."""
    bad = _first_bad_shape(dec, frames, first) if isinstance(dec, Decoder) else None
    n_ok = len(frames) if bad is None else int(bad.frame) - first  # type: ignore[attr-defined]
    out, err = _decode_frames(dec, frames[:n_ok], first)
    return out, (err if err is not None else bad)


def _emit(decoded: _Decoded) -> Iterator[np.ndarray]:
    out, err = decoded
    yield from out
    if err is not None:
        raise err


def _fill_batch(
    q: queue.Queue[Any], x: Any, t0: float, batch: int, max_latency: float
) -> tuple[list[Any], bool, BaseException | None]:
    """``(frames, ended, source_error)``: ``x`` and what joins it within the latency."""
    frames = [x]
    deadline = t0 + max_latency
    while len(frames) < batch:
        rem = deadline - time.perf_counter()
        try:
            x, t = q.get(timeout=rem) if rem > 0 else q.get_nowait()
        except queue.Empty:
            break
        if x is _END:
            return frames, True, None
        if x is _ERR:
            return frames, True, t
        frames.append(x)
    return frames, False, None


def _sstream(
    dec: Any, it: Iterator[Any], batch: int, max_latency: float, read_ahead: int, workers: int
) -> Iterator[np.ndarray]:
    q: queue.Queue[Any] = queue.Queue(maxsize=read_ahead)
    stop = threading.Event()
    th = threading.Thread(target=_reader, args=(it, q, stop), name="cscore-stream", daemon=True)
    th.start()
    pool = (
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="cscore-stream-decode")
        if workers > 1
        else None
    )
    inflight: deque[Future[_Decoded]] = deque()
    n_read = 0
    source_error: BaseException | None = None
    try:
        while True:
            while inflight and inflight[0].done():
                yield from _emit(inflight.popleft().result())
            if len(inflight) >= workers:
                yield from _emit(inflight.popleft().result())
                continue
            # the first frame of the next batch (keep yielding results meanwhile)
            while True:
                try:
                    x, t0 = q.get(timeout=0.001 if inflight else 0.1)
                    break
                except queue.Empty:
                    while inflight and inflight[0].done():
                        yield from _emit(inflight.popleft().result())
            if x is _END:
                break
            if x is _ERR:
                source_error = t0
                break
            frames, ended, source_error = _fill_batch(q, x, t0, batch, max_latency)
            first = n_read
            n_read += len(frames)
            if pool is None:
                yield from _emit(_decode_batch(dec, frames, first))
            else:
                inflight.append(pool.submit(_decode_batch, dec, frames, first))
            if ended:
                break
        while inflight:  # every frame read before the end (or the source's error)
            yield from _emit(inflight.popleft().result())
        if source_error is not None:
            raise source_error
    finally:
        stop.set()
        while True:  # unblock the reader
            try:
                q.get_nowait()
            except queue.Empty:
                break
        th.join(timeout=1.0)
        if pool is not None:
            for f in inflight:
                f.cancel()
            pool.shutdown(wait=True)


async def _astream(
    dec: Any, frames: AsyncIterable[Any], batch: int, max_latency: float, read_ahead: int
) -> AsyncIterator[np.ndarray]:
    q: asyncio.Queue[Any] = asyncio.Queue(maxsize=read_ahead)

    async def produce() -> None:
        try:
            async for x in frames:
                await q.put((x, time.perf_counter()))
            await q.put((_END, 0.0))
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            await q.put((_ERR, exc))

    loop = asyncio.get_running_loop()
    producer = asyncio.ensure_future(produce())
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cscore-stream")
    pending: asyncio.Future[Any] | None = None
    n_done = 0
    ended = False
    source_error: BaseException | None = None
    try:
        while not ended:
            if pending is None:
                pending = asyncio.ensure_future(q.get())
            x, t0 = await pending
            pending = None
            if x is _END:
                break
            if x is _ERR:
                source_error = t0
                break
            frames_: list[Any] = [x]
            deadline = t0 + max_latency
            while len(frames_) < batch:
                if q.qsize() > 0:
                    x, t = q.get_nowait()
                else:
                    rem = deadline - time.perf_counter()
                    if rem <= 0:
                        break
                    pending = asyncio.ensure_future(q.get())
                    done, _ = await asyncio.wait({pending}, timeout=rem)
                    if not done:
                        break  # keep `pending` for the next batch: no frame is lost
                    x, t = pending.result()
                    pending = None
                if x is _END or x is _ERR:
                    ended = True
                    source_error = t if x is _ERR else None
                    break
                frames_.append(x)
            first = n_done
            out, err = await loop.run_in_executor(pool, _decode_batch, dec, frames_, first)
            n_done += len(frames_)
            for r in out:
                yield r
            if err is not None:
                raise err
        if source_error is not None:  # after every frame the source delivered before it
            raise source_error
    finally:
        if pending is not None:
            pending.cancel()
        producer.cancel()
        try:
            await producer
        except BaseException:
            pass
        pool.shutdown(wait=True)
