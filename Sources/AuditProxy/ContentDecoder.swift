internal import CBrotli
internal import CZlib
internal import CZstd

/// Removes the content codings a response's `Content-Encoding` names (`gzip`, `x-gzip`,
/// `deflate`, `br`, `zstd`), piece by piece, so that a recording keeps a body as the client's application
/// reads it: HAR's `content.text` is the decoded body, and only a decoded body can be redacted.
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

    /// The codings a `Content-Encoding` value lists, lower-cased, in the order they were applied,
    /// without `identity`.
    static func codings(_ contentEncoding: String) -> [String] {
        contentEncoding.split(separator: ",").map { $0.trimmingASCIISpaces().lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
    }

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

    /// Inflates `input` into new bytes; true once the stream (every gzip member) ended.
    private func inflate(_ input: [UInt8], stream: UnsafeMutablePointer<z_stream>, coding: String) throws(Failure)
        -> (output: [UInt8], ended: Bool)
    {
        var output: [UInt8] = []
        var ended = false
        var failure: Failure?
        var buffer = [UInt8](repeating: 0, count: Self.outputSize)
        unsafe input.withUnsafeBufferPointer { input in
            unsafe buffer.withUnsafeMutableBufferPointer { buffer in
                unsafe stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                unsafe stream.pointee.avail_in = UInt32(input.count)
                while failure == nil {
                    unsafe stream.pointee.next_out = buffer.baseAddress
                    unsafe stream.pointee.avail_out = UInt32(buffer.count)
                    let status = unsafe CZlib.inflate(stream, Z_NO_FLUSH)
                    let produced = unsafe buffer.count - Int(stream.pointee.avail_out)
                    if let problem = count(produced) {
                        failure = problem
                        break
                    }
                    unsafe output.append(contentsOf: buffer[..<produced])
                    let remaining = unsafe stream.pointee.avail_in
                    switch status {
                    case Z_STREAM_END:
                        // Another gzip member may follow; anything else after the end is ignored.
                        let startsMember =
                            unsafe remaining >= 2 && stream.pointee.next_in[0] == 0x1F
                            && stream.pointee.next_in[1] == 0x8B
                        guard startsMember, unsafe inflateReset(stream) == Z_OK else {
                            ended = true
                            return
                        }
                    case Z_OK:
                        if remaining == 0 && produced < buffer.count { return }
                    case Z_BUF_ERROR:
                        return  // needs more input
                    default:
                        failure = .corrupt(coding)
                    }
                }
            }
        }
        if let failure { throw failure }
        return (output, ended)
    }

    /// Decodes `input` as brotli into new bytes; true once the stream ended.
    private func unbrotli(_ input: [UInt8], state: OpaquePointer) throws(Failure) -> (output: [UInt8], ended: Bool) {
        var output: [UInt8] = []
        var ended = false
        var failure: Failure?
        var buffer = [UInt8](repeating: 0, count: Self.outputSize)
        unsafe input.withUnsafeBufferPointer { input in
            unsafe buffer.withUnsafeMutableBufferPointer { buffer in
                var availableIn = input.count
                var nextIn = input.baseAddress
                while failure == nil {
                    var availableOut = buffer.count
                    var nextOut = buffer.baseAddress
                    let result = unsafe BrotliDecoderDecompressStream(
                        state, &availableIn, &nextIn, &availableOut, &nextOut, nil)
                    let produced = buffer.count - availableOut
                    if let problem = count(produced) {
                        failure = problem
                        break
                    }
                    unsafe output.append(contentsOf: buffer[..<produced])
                    switch result {
                    case BROTLI_DECODER_RESULT_SUCCESS:
                        ended = true
                        return
                    case BROTLI_DECODER_RESULT_NEEDS_MORE_OUTPUT:
                        continue
                    case BROTLI_DECODER_RESULT_NEEDS_MORE_INPUT:
                        return
                    default:
                        failure = .corrupt("br")
                    }
                }
            }
        }
        if let failure { throw failure }
        return (output, ended)
    }

    /// Decodes `input` as zstd into new bytes; true when a frame ended with the input (another
    /// frame may still follow).
    private func unzstd(_ input: [UInt8], stream: OpaquePointer) throws(Failure) -> (output: [UInt8], ended: Bool) {
        var output: [UInt8] = []
        var ended = false
        var failure: Failure?
        var buffer = [UInt8](repeating: 0, count: Self.outputSize)
        unsafe input.withUnsafeBytes { input in
            unsafe buffer.withUnsafeMutableBytes { buffer in
                var source = unsafe ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
                while failure == nil {
                    var target = unsafe ZSTD_outBuffer(dst: buffer.baseAddress, size: buffer.count, pos: 0)
                    let hint = unsafe ZSTD_decompressStream(stream, &target, &source)
                    if ZSTD_isError(hint) != 0 {
                        failure = .corrupt("zstd")
                        break
                    }
                    if let problem = unsafe count(target.pos) {
                        failure = problem
                        break
                    }
                    unsafe output.append(contentsOf: buffer[..<target.pos])
                    // 0: a frame ended and was flushed whole.
                    ended = hint == 0
                    if unsafe source.pos == source.size && target.pos < target.size { return }
                }
            }
        }
        if let failure { throw failure }
        return (output, ended)
    }

    /// Counts `produced` more bytes; the failure when they pass the bound.
    private func count(_ produced: Int) -> Failure? {
        producedBytes += produced
        return producedBytes > maximumBytes ? .tooLarge : nil
    }
}

extension Substring {
    fileprivate func trimmingASCIISpaces() -> Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}
