package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"strconv"
	"time"
)

// The raw (kv) writes speak the text protocol on the pooled connections,
// as the gets do, so that every one of them ends by the deadline of the
// statement it serves: gomemcache takes no context, and its timeout
// applies to each read and write afresh, so a statement of many items
// could take that timeout once per item.

// deleteBatch bounds the deletes written before their replies are read: a
// pipeline of unbounded length could fill both directions' socket buffers
// and stall until the deadline.
const deleteBatch = 100

// errTooLargeReply is memcached refusing an item over its size limit.
var errTooLargeReply = errors.New("store: memcached: object too large for cache")

// do runs op on a connection to p's server until deadline. A pooled
// connection that the server had closed is retried once on a new one, as a
// get is: op must be safe to repeat. The connection goes back to the pool
// only when op returns nil or a reply that leaves the protocol state
// clean (errTooLargeReply: memcached swallows the refused value).
func (p *connPool) do(ctx context.Context, deadline time.Time, op func(c *mcConn) error) error {
	fresh := false
	for {
		c, reused, err := p.conn(ctx, deadline, fresh)
		if err != nil {
			return err
		}
		if err = c.nc.SetDeadline(deadline); err == nil {
			err = op(c)
		}
		if err == nil || errors.Is(err, errTooLargeReply) {
			p.put(c)
			return err
		}
		c.nc.Close()
		if !reused || fresh || !connGone(err) {
			return err
		}
		p.drain()
		fresh = true
	}
}

// set stores val under key with memcached expiration exp.
func (p *connPool) set(ctx context.Context, key string, val []byte, exp int32, deadline time.Time) error {
	return p.do(ctx, deadline, func(c *mcConn) error {
		c.w.WriteString("set ")
		c.w.WriteString(key)
		c.w.WriteString(" 0 ")
		c.w.WriteString(strconv.FormatInt(int64(exp), 10))
		c.w.WriteByte(' ')
		c.w.WriteString(strconv.Itoa(len(val)))
		c.w.WriteString("\r\n")
		c.w.Write(val)
		c.w.WriteString("\r\n")
		if err := c.w.Flush(); err != nil {
			return err
		}
		line, err := c.replyLine()
		switch {
		case err != nil:
			return err
		case string(line) == "STORED":
			return nil
		case bytes.HasPrefix(line, []byte("SERVER_ERROR object too large")):
			return errTooLargeReply
		}
		return errors.Join(errProtocol, errors.New(string(line)))
	})
}

// deleteMulti removes keys, pipelined in batches, and sets existed[i] for
// each key that was there. On an error, the deletes already answered have
// their existed set; the others are unknown.
func (p *connPool) deleteMulti(ctx context.Context, keys []string, existed []bool, deadline time.Time) error {
	for len(keys) > 0 {
		n := min(len(keys), deleteBatch)
		batch, out := keys[:n], existed[:n]
		err := p.do(ctx, deadline, func(c *mcConn) error {
			for _, k := range batch {
				c.w.WriteString("delete ")
				c.w.WriteString(k)
				c.w.WriteString("\r\n")
			}
			if err := c.w.Flush(); err != nil {
				return err
			}
			for i := range batch {
				line, err := c.replyLine()
				if err != nil {
					return err
				}
				switch string(line) {
				case "DELETED":
					out[i] = true
				case "NOT_FOUND":
					out[i] = false
				default:
					return errors.Join(errProtocol, errors.New(string(line)))
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		keys, existed = keys[n:], existed[n:]
	}
	return nil
}

// replyLine reads one reply line, without its line ending.
func (c *mcConn) replyLine() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return nil, errProtocol
	}
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}
