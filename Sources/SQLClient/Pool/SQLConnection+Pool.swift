/// What ``SQLConnectionPool`` asks of a connection: its state when it comes back, and the
/// check and session reset before it is lent again (through ``resetConnectionBeforeNextRequest(keepingTransaction:)``).
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

    /// What the check at lease found (``prepareForLease(reset:)``).
    enum LeaseCheck: Sendable, Equatable {
        /// Open, and its socket shows neither a FIN nor a RST: lend it.
        case usable
        /// The connection is closed (it failed, or was closed, while idle in the pool).
        case closed
        /// The socket shows the server (or the network between) closed or reset it while it sat idle.
        case dropped(IdleSocketStatus)
    }

    /// Readies the connection for its next user, in one crossing into the actor:
    ///
    /// 1. The idle check (`SocketStream.idleStatus()`, the one the session recovery makes before
    ///    a request's first byte: `poll` with a zero timeout, then a 1-byte `recv` with MSG_PEEK
    ///    only when something is to be read): a connection whose socket shows a FIN or a RST is
    ///    `.dropped`, and is not touched here (the pool closes it). The check never waits and
    ///    never consumes a byte. Bytes waiting on an idle connection do not make it dead: they
    ///    stay where they are for its next read (a TLS record such as a TLS 1.3 session ticket is
    ///    taken by the TLS layer then); a FIN behind them is still seen on Linux (POLLRDHUP), a
    ///    RST behind them by POLLHUP. On a session that is plaintext after login (`encryption`
    ///    `.unencrypted` or `.loginOnly`) no TLS record can be waiting, and a server sends nothing
    ///    unasked: bytes waiting there are `.dropped(.unsolicitedBytes)` (else a whole TDS message
    ///    injected meanwhile would be read as the next request's answer). Only a connection at rest (logged in, no request running)
    ///    is checked; one still busy (finishing a cancelled request's response) is lent as before.
    /// 2. With `reset`, RESETCONNECTION (status 0x08, [MS-TDS] 2.2.3.1.2) on the first packet of
    ///    the next request, whatever it is, and only that one; the session tracked here returns to
    ///    the login's database, language and collation.
    func prepareForLease(reset: Bool) -> LeaseCheck {
        guard isOpen else { return .closed }
        if machine.state == .ready, let stream = socket as? SocketStream {
            let plaintext = session.encryption == .unencrypted || session.encryption == .loginOnly
            let status = stream.idleStatus(unreadBytesAreForeign: plaintext)
            if status != .open { return .dropped(status) }
        }
        if reset {
            resetConnectionBeforeNextRequest(keepingTransaction: false)
            session = machine.sessionReset(keepingTransaction: false)
        }
        return .usable
    }
}
