package wire

import "encoding/binary"

// HTTP/2 (RFC 9113) as the client speaks it.

// preface is what a client says first on a connection.
const preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"

// Frame types.
const (
	frameData         = 0x0
	frameHeaders      = 0x1
	framePriority     = 0x2
	frameRSTStream    = 0x3
	frameSettings     = 0x4
	framePushPromise  = 0x5
	framePing         = 0x6
	frameGoAway       = 0x7
	frameWindowUpdate = 0x8
	frameContinuation = 0x9
)

// Frame flags.
const (
	flagEndStream  = 0x1
	flagAck        = 0x1
	flagEndHeaders = 0x4
	flagPadded     = 0x8
	flagPriority   = 0x20
)

// Settings.
const (
	settingHeaderTableSize      = 0x1
	settingEnablePush           = 0x2
	settingMaxConcurrentStreams = 0x3
	settingInitialWindowSize    = 0x4
	settingMaxFrameSize         = 0x5
	settingMaxHeaderListSize    = 0x6
)

// Error codes of RST_STREAM and GOAWAY.
const (
	errCodeNoError       = 0x0
	errCodeProtocol      = 0x1
	errCodeInternal      = 0x2
	errCodeFlowControl   = 0x3
	errCodeRefusedStream = 0x7
	errCodeCancel        = 0x8
	errCodeEnhanceCalm   = 0xb
)

// The protocol's defaults and the client's own settings.
const (
	defaultWindow     = 65535
	defaultFrameSize  = 16384
	defaultTableSize  = 4096
	maxWindow         = 1<<31 - 1
	frameHeaderLen    = 9
	maxStreamID       = 1<<31 - 1
	recvStreamWindow  = 1 << 20 // what a stream of the client's may receive before it says more
	recvConnWindow    = 1 << 24 // what the connection may receive before it says more
	recvHeaderListMax = 1 << 20 // the largest header block the client decodes
	// streamIDReserve: a connection whose next stream id passes
	// maxStreamID less this takes no more calls and is opened again once
	// its calls are done.
	streamIDReserve = 1 << 16
)

// appendFrameHeader appends a frame's 9-byte header.
func appendFrameHeader(dst []byte, length int, typ, flags byte, stream uint32) []byte {
	return append(dst, byte(length>>16), byte(length>>8), byte(length), typ, flags,
		byte(stream>>24)&0x7f, byte(stream>>16), byte(stream>>8), byte(stream))
}

// putFrameLength writes length into the frame header at b[0:3].
func putFrameLength(b []byte, length int) {
	b[0], b[1], b[2] = byte(length>>16), byte(length>>8), byte(length)
}

// appendSettings appends a SETTINGS frame of (id, value) pairs.
func appendSettings(dst []byte, kv ...uint32) []byte {
	dst = appendFrameHeader(dst, 6*len(kv)/2, frameSettings, 0, 0)
	for i := 0; i+1 < len(kv); i += 2 {
		dst = binary.BigEndian.AppendUint16(dst, uint16(kv[i]))
		dst = binary.BigEndian.AppendUint32(dst, kv[i+1])
	}
	return dst
}

// appendWindowUpdate appends a WINDOW_UPDATE frame.
func appendWindowUpdate(dst []byte, stream uint32, inc uint32) []byte {
	return binary.BigEndian.AppendUint32(appendFrameHeader(dst, 4, frameWindowUpdate, 0, stream), inc&0x7fffffff)
}

// appendRSTStream appends a RST_STREAM frame.
func appendRSTStream(dst []byte, stream uint32, code uint32) []byte {
	return binary.BigEndian.AppendUint32(appendFrameHeader(dst, 4, frameRSTStream, 0, stream), code)
}

// frameHeader is a parsed frame header.
type frameHeader struct {
	length int
	typ    byte
	flags  byte
	stream uint32
}

func parseFrameHeader(b []byte) frameHeader {
	return frameHeader{
		length: int(b[0])<<16 | int(b[1])<<8 | int(b[2]),
		typ:    b[3],
		flags:  b[4],
		stream: binary.BigEndian.Uint32(b[5:9]) & 0x7fffffff,
	}
}
