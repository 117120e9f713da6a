internal import CBrotli
internal import CZlib
internal import CZstd

/// Removes the content codings a body's `Content-Encoding` names (`gzip`, `x-gzip`, `deflate`,
/// `br`, `zstd`), piece by piece, so that a recording keeps a body as an application reads it:
/// HAR's texts are decoded bodies, and only a decoded body can be redacted.
///
/// Codings are undone last-applied first (`Content-Encoding: gzip, br` is br of gzip). `deflate`
/// is read as the zlib format RFC 9110 names, or as raw deflate, which some servers send instead;
/// `gzip` may hold several members, and `zstd` several frames, one after the other.
///
/// Unsafe code: each stage owns a zlib, brotli or zstd stream (C state allocated in `init`, freed in
/// `deinit`), and each call hands it pointers into buffers that live for that call only. The
/// decoder is used by one thread at a time (not `Sendable`).
@safe
final class ContentDecoder {
    /// Why a body could not be decoded.
    enum Failure: Error, Equatable {
        /// A coding this decoder does not know (`compress`, `dcb`, …).
        case unsupported(String)
        /// The bytes are not valid for the coding.
        case corrupt(String)
        /// The body ended before the coding's stream did.
        case truncated(String)
        /// The decoded body would exceed the bound.
        case tooLarge
    }

    @unsafe private enum Stage {
        case zlib(UnsafeMutablePointer<z_stream>, coding: String, hasOutput: Bool, isDone: Bool)
        case brotli(OpaquePointer, isDone: Bool)
        /// A zstd stream; done when its last frame ended with the input.
        case zstd(OpaquePointer, isDone: Bool)
    }

    private var stages: [Stage] = unsafe []
    private let maximumBytes: Int
    private var producedBytes = 0

    /// A decoder for the codings `codings` lists (in the order applied), producing at most
    /// `maximumBytes`.
    ///
    /// - Throws: ``Failure/unsupported(_:)`` for a coding it cannot undo.
    init(codings: [String], maximumBytes: Int) throws(Failure) {
        self.maximumBytes = maximumBytes
        for coding in codings.reversed() {
            switch coding {
            case "gzip", "x-gzip", "deflate":
                // 15 + 32: a zlib or a gzip header, whichever comes.
                guard let stream = unsafe Self.zlibStream(windowBits: 15 + 32) else { throw .unsupported(coding) }
                unsafe stages.append(.zlib(stream, coding: coding, hasOutput: false, isDone: false))
            case "br":
                guard let state = unsafe BrotliDecoderCreateInstance(nil, nil, nil) else {
                    throw .unsupported(coding)
                }
                unsafe stages.append(.brotli(state, isDone: false))
            case "zstd":
                guard let stream = unsafe ZSTD_createDStream() else { throw .unsupported(coding) }
                unsafe stages.append(.zstd(stream, isDone: false))
            default:
                throw .unsupported(coding)
            }
        }
    }

    deinit {
        for index in unsafe stages.indices {
            switch unsafe stages[index] {
            case .zlib(let stream, _, _, _):
                unsafe inflateEnd(stream)
                unsafe stream.deallocate()
            case .brotli(let state, _):
                unsafe BrotliDecoderDestroyInstance(state)
            case .zstd(let stream, _):
                unsafe ZSTD_freeDStream(stream)
            }
        }
    }

    /// The decoded bytes of the next piece of the body.
    func decode(_ bytes: [UInt8]) throws(Failure) -> [UInt8] {
        var piece = bytes
        for index in unsafe stages.indices {
            piece = try decode(piece, stage: index)
        }
        return piece
    }

    /// `body` whole with `codings` (as ``RecordedExchange/contentCodings(in:)`` lists them)
    /// undone, at most `maximumBytes` of it.
    static func decode(_ body: [UInt8], codings: [String], maximumBytes: Int) throws(Failure) -> [UInt8] {
        let decoder = try ContentDecoder(codings: codings, maximumBytes: maximumBytes)
        let decoded = try decoder.decode(body)
        try decoder.finish()
        return decoded
    }

    /// Checks that every coding's stream ended with the body.
    func finish() throws(Failure) {
        for index in unsafe stages.indices {
            switch unsafe stages[index] {
            case .zlib(_, let coding, _, let isDone) where !isDone: throw .truncated(coding)
            case .brotli(_, let isDone) where !isDone: throw .truncated("br")
            case .zstd(_, let isDone) where !isDone: throw .truncated("zstd")
            default: break
            }
        }
    }

    private static let outputSize = 16 * 1_024

    private func decode(_ input: [UInt8], stage index: Int) throws(Failure) -> [UInt8] {
        guard !input.isEmpty else { return [] }
        switch unsafe stages[index] {
        case .zlib(let stream, let coding, let hasOutput, let isDone):
            guard !isDone else { return [] }  // bytes after the end: ignored, as clients do
            do {
                let (output, ended) = try unsafe inflate(input, stream: stream, coding: coding)
                unsafe stages[index] = .zlib(
                    stream, coding: coding, hasOutput: hasOutput || !output.isEmpty, isDone: ended)
                return output
            } catch .corrupt(_) where coding == "deflate" && !hasOutput {
                // Raw deflate, without the zlib header.
                unsafe inflateEnd(stream)
                guard unsafe CZlib_inflateInit2(stream, -15) == Z_OK else { throw .corrupt(coding) }
                let (output, ended) = try unsafe inflate(input, stream: stream, coding: coding)
                unsafe stages[index] = .zlib(stream, coding: coding, hasOutput: true, isDone: ended)
                return output
            }
        case .brotli(let state, let isDone):
            guard !isDone else { return [] }
            let (output, ended) = try unsafe unbrotli(input, state: state)
            unsafe stages[index] = .brotli(state, isDone: ended)
            return output
        case .zstd(let stream, _):
            let (output, ended) = try unsafe unzstd(input, stream: stream)
            unsafe stages[index] = .zstd(stream, isDone: ended)
            return output
        }
    }

    private static func zlibStream(windowBits: Int32) -> UnsafeMutablePointer<z_stream>? {
        let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
        unsafe stream.initialize(to: z_stream())
        guard unsafe CZlib_inflateInit2(stream, windowBits) == Z_OK else {
            unsafe stream.deallocate()
            return nil
        }
        return unsafe stream
    }

    /// What a coder's step asks for next.
    private enum Step {
        /// Call it again: it has more input or output to give.
        case again
        /// It has used all the input.
        case needsInput
        /// Its stream ended.
        case ended
        /// The input is not valid for the coding.
        case corrupt
    }

    /// Runs `step` over `input`, a buffer of output at a time, until it needs more input or its
    /// stream ends, and collects what it produces; true once the stream ended. `step` gets the
    /// input (the same each call: it keeps its own position) and an empty buffer, and says how
    /// many bytes of the buffer it filled and what next.
    private func drain(
        _ input: [UInt8], coding: String,
        _ step: (UnsafeBufferPointer<UInt8>, UnsafeMutableBufferPointer<UInt8>) -> (produced: Int, next: Step)
    ) throws(Failure) -> (output: [UInt8], ended: Bool) {
        var output: [UInt8] = []
        var outcome: Result<Bool, Failure> = .success(false)
        var buffer = [UInt8](repeating: 0, count: Self.outputSize)
        unsafe input.withUnsafeBufferPointer { input in
            unsafe buffer.withUnsafeMutableBufferPointer { buffer in
                while true {
                    let (produced, next) = unsafe step(input, buffer)
                    if let problem = count(produced) {
                        outcome = .failure(problem)
                        return
                    }
                    unsafe output.append(contentsOf: buffer[..<produced])
                    switch next {
                    case .again: continue
                    case .needsInput: return
                    case .ended: outcome = .success(true)
                    case .corrupt: outcome = .failure(.corrupt(coding))
                    }
                    return
                }
            }
        }
        return (output, try outcome.get())
    }

    /// Inflates `input` into new bytes; true once the stream (every gzip member) ended.
    private func inflate(_ input: [UInt8], stream: UnsafeMutablePointer<z_stream>, coding: String) throws(Failure)
        -> (output: [UInt8], ended: Bool)
    {
        var isStarted = false
        return try unsafe drain(input, coding: coding) { input, buffer in
            if !isStarted {
                unsafe stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                unsafe stream.pointee.avail_in = UInt32(input.count)
                isStarted = true
            }
            unsafe stream.pointee.next_out = buffer.baseAddress
            unsafe stream.pointee.avail_out = UInt32(buffer.count)
            let status = unsafe CZlib.inflate(stream, Z_NO_FLUSH)
            let produced = unsafe buffer.count - Int(stream.pointee.avail_out)
            let remaining = unsafe stream.pointee.avail_in
            switch status {
            case Z_STREAM_END:
                // Another gzip member may follow; anything else after the end is ignored.
                let startsMember =
                    unsafe remaining >= 2 && stream.pointee.next_in[0] == 0x1F
                    && stream.pointee.next_in[1] == 0x8B
                guard startsMember, unsafe inflateReset(stream) == Z_OK else { return (produced, .ended) }
                return (produced, .again)
            case Z_OK:
                return (produced, remaining == 0 && produced < buffer.count ? .needsInput : .again)
            case Z_BUF_ERROR:
                return (produced, .needsInput)
            default:
                return (produced, .corrupt)
            }
        }
    }

    /// Decodes `input` as brotli into new bytes; true once the stream ended.
    private func unbrotli(_ input: [UInt8], state: OpaquePointer) throws(Failure) -> (output: [UInt8], ended: Bool) {
        var availableIn = 0
        var nextIn: UnsafePointer<UInt8>?
        var isStarted = false
        return try unsafe drain(input, coding: "br") { input, buffer in
            if !isStarted {
                availableIn = input.count
                unsafe nextIn = input.baseAddress
                isStarted = true
            }
            var availableOut = buffer.count
            var nextOut = buffer.baseAddress
            let result = unsafe BrotliDecoderDecompressStream(
                state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
            let produced = buffer.count - availableOut
            switch result {
            case BROTLI_DECODER_RESULT_SUCCESS: return (produced, .ended)
            case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT: return (produced, .again)
            case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT: return (produced, .needsInput)
            default: return (produced, .corrupt)
            }
        }
    }

    /// Decodes `input` as zstd into new bytes; true when a frame ended with the input (another
    /// frame may still follow).
    private func unzstd(_ input: [UInt8], stream: OpaquePointer) throws(Failure) -> (output: [UInt8], ended: Bool) {
        var source = unsafe ZSTD_inBuffer(src: nil, size: 0, pos: 0)
        var isStarted = false
        var hasFrameEnded = false
        let (output, _) = try unsafe drain(input, coding: "zstd") { input, buffer in
            if !isStarted {
                unsafe source = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
                isStarted = true
            }
            var target = unsafe ZSTD_outBuffer(dst: buffer.baseAddress, size: buffer.count, pos: 0)
            let hint = unsafe ZSTD_decompressStream(stream, &target, &source)
            guard ZSTD_isError(hint) == 0 else { return (0, .corrupt) }
            // 0: a frame ended and was flushed whole.
            hasFrameEnded = hint == 0
            let isDrained = unsafe source.pos == source.size && target.pos < target.size
            return unsafe (target.pos, isDrained ? .needsInput : .again)
        }
        return (output, hasFrameEnded)
    }

    /// Counts `produced` more bytes; the failure when they pass the bound.
    private func count(_ produced: Int) -> Failure? {
        producedBytes += produced
        return producedBytes > maximumBytes ? .tooLarge : nil
    }
}
