package history

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// conns is a client's dialer, which keeps every connection it made so that
// the client can be killed as a process is: each connection reset (RST),
// and no new one made, so that not even a LeaveGroup gets out.
type conns struct {
	mu    sync.Mutex
	all   []net.Conn
	dead  bool
	dials net.Dialer
}

var errKilled = errors.New("history: this client was killed")

func (c *conns) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return nil, errKilled
	}
	conn, err := c.dials.DialContext(ctx, network, host)
	if err == nil {
		c.all = append(c.all, conn)
	}
	return conn, err
}

// kill resets every connection and refuses new ones.
func (c *conns) kill() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = true
	for _, conn := range c.all {
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		conn.Close()
	}
}

func (c *conns) isDead() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

// client makes a kgo client on addr with a killable dialer.
func client(addr string, opts ...kgo.Opt) (*kgo.Client, *conns, error) {
	c := new(conns)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.Dialer(c.dial)}, opts...)...)
	return cl, c, err
}
