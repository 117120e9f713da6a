extension Duration {
    /// The duration in milliseconds, with its fraction: what records and recordings keep of times.
    package var milliseconds: Double {
        Double(components.seconds) * 1_000 + Double(components.attoseconds) / 1e15
    }
}
