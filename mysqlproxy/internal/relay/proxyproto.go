package relay

import (
	"net"
	"net/netip"
	"strconv"
)

// proxyHeader returns the PROXY protocol version 1 header that tells the
// backend a connection is client's, which reached mycached at local:
// "PROXY TCP4 <client ip> <local ip> <client port> <local port>\r\n", or
// TCP6 when either address is IPv6 (an IPv4 one then written as mapped).
// An address that is not TCP gives "PROXY UNKNOWN\r\n", which the server
// takes as a connection of the proxy's own.
func proxyHeader(client, local net.Addr) []byte {
	c, ok1 := client.(*net.TCPAddr)
	l, ok2 := local.(*net.TCPAddr)
	if !ok1 || !ok2 {
		return []byte("PROXY UNKNOWN\r\n")
	}
	ca, ok1 := netip.AddrFromSlice(c.IP)
	la, ok2 := netip.AddrFromSlice(l.IP)
	if !ok1 || !ok2 {
		return []byte("PROXY UNKNOWN\r\n")
	}
	family := "TCP6"
	if ca.Unmap().Is4() && la.Unmap().Is4() {
		family, ca, la = "TCP4", ca.Unmap(), la.Unmap()
	} else {
		ca, la = netip.AddrFrom16(ca.As16()), netip.AddrFrom16(la.As16())
	}
	b := make([]byte, 0, 108)
	b = append(b, "PROXY "+family+" "...)
	b = append(b, ca.String()...)
	b = append(b, ' ')
	b = append(b, la.String()...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(c.Port), 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(l.Port), 10)
	return append(b, "\r\n"...)
}

// ServerAddr is the address the server sees the session come from, which
// it matches grants by: the client's, when a PROXY header named it, and
// otherwise mycached's own end of the backend connection.
func (s *Session) ServerAddr() string {
	if s.serverAddr == "" {
		var a net.Addr
		if s.Backend != nil {
			a = s.Backend.NetConn.LocalAddr()
		}
		if c, ok := s.Client.NetConn.RemoteAddr().(*net.TCPAddr); ok && s.opts.ProxyProtocol && c.IP != nil {
			a = c
		}
		s.serverAddr = ipOf(a)
	}
	return s.serverAddr
}

// ipOf returns a TCP address's IP, as IPv4 when it is one, or the
// address as it writes itself.
func ipOf(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		if ip, ok := netip.AddrFromSlice(t.IP); ok {
			return ip.Unmap().String()
		}
	}
	if a == nil {
		return ""
	}
	return a.String()
}
