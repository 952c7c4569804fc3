/// What ``SQLConnectionPool`` asks of a connection: its state when it comes back, and the
/// session reset before it is lent again (through ``resetConnectionBeforeNextRequest(keepingTransaction:)``).
extension SQLConnection {
    /// A returned connection as the pool sees it, in one crossing into the actor.
    struct PoolReturnState: Sendable {
        var isOpen: Bool
        var isInTransaction: Bool
        /// ENVCHANGE type 18 (RESETCONNECTION acknowledged) received over the connection's life.
        var resetAcknowledgements: Int
        /// Idle connection recoveries (SESSIONRECOVERY) over the connection's life.
        var sessionRecoveries: Int = 0
    }

    func poolReturnState() -> PoolReturnState {
        PoolReturnState(isOpen: isOpen, isInTransaction: isInTransaction,
                        resetAcknowledgements: machine.resetAcknowledgements, sessionRecoveries: sessionRecoveries)
    }

    /// Readies the connection for its next user: RESETCONNECTION (status 0x08, [MS-TDS]
    /// 2.2.3.1.2) on the first packet of the next request, whatever it is, and only that one;
    /// the session tracked here returns to the login's database, language and collation.
    /// Answers whether the connection is still open.
    func prepareForReuse() -> Bool {
        guard isOpen else { return false }
        resetConnectionBeforeNextRequest(keepingTransaction: false)
        session = machine.sessionReset(keepingTransaction: false)
        return true
    }
}
