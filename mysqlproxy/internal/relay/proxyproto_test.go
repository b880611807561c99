package relay

import (
	"net"
	"testing"
)

func TestProxyHeader(t *testing.T) {
	tcp := func(ip string, port int) net.Addr { return &net.TCPAddr{IP: net.ParseIP(ip), Port: port} }
	for _, c := range []struct {
		client, local net.Addr
		want          string
	}{
		{tcp("127.0.0.3", 51000), tcp("127.0.0.1", 3307), "PROXY TCP4 127.0.0.3 127.0.0.1 51000 3307\r\n"},
		{tcp("::1", 51000), tcp("::1", 3307), "PROXY TCP6 ::1 ::1 51000 3307\r\n"},
		{tcp("2001:db8::7", 1), tcp("2001:db8::1", 65535), "PROXY TCP6 2001:db8::7 2001:db8::1 1 65535\r\n"},
		// An IPv4 client on an IPv6 listener.
		{tcp("10.0.0.5", 40000), tcp("::1", 3307), "PROXY TCP6 ::ffff:10.0.0.5 ::1 40000 3307\r\n"},
		{&net.UnixAddr{Name: "/tmp/x.sock", Net: "unix"}, tcp("127.0.0.1", 3307), "PROXY UNKNOWN\r\n"},
		{tcp("", 1), tcp("127.0.0.1", 3307), "PROXY UNKNOWN\r\n"},
	} {
		if got := string(proxyHeader(c.client, c.local)); got != c.want {
			t.Errorf("proxyHeader(%v, %v) = %q, want %q", c.client, c.local, got, c.want)
		}
	}
}
