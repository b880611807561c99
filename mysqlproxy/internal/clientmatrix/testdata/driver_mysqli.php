<?php
// Runs the client matrix's cases with PHP's mysqli (php-mysql, mysqlnd).
// Text steps use multi_query; prepared steps use server-side prepared
// statements. mysqlnd has no reconnect option.

require __DIR__ . '/common.php';

mysqli_report(MYSQLI_REPORT_OFF);

class MysqliDriver
{
    public function open(array $c, bool $reconnect)
    {
        $m = mysqli_init();
        $m->options(MYSQLI_OPT_LOCAL_INFILE, true);
        if (!@$m->real_connect($c['host'], $c['user'], $c['password'], $c['database'], $c['port'], null, empty($c['compress']) ? 0 : MYSQLI_CLIENT_COMPRESS)) {
            throw new CmError(['error' => ['code' => $m->connect_errno, 'message' => $m->connect_error]]);
        }
        $m->set_charset('utf8mb4');
        return $m;
    }

    public function id($m): string
    {
        return (string)$m->thread_id;
    }

    public function ping($m)
    {
        if (!@$m->ping()) {
            throw new CmError(['error' => $this->err($m)]);
        }
        return 'ok';
    }

    private function err($o): array
    {
        return ['code' => $o->errno, 'state' => $o->sqlstate, 'message' => $o->error];
    }

    private function fields($r): array
    {
        $out = [];
        foreach ($r->fetch_fields() as $f) {
            $out[] = (array)$f;
        }
        return $out;
    }

    private function rows($r): array
    {
        $rows = [];
        while (($row = $r->fetch_row()) !== null && $row !== false) {
            $rows[] = array_map('cm_text', $row);
        }
        return $rows;
    }

    public function query($m, string $sql): array
    {
        $out = ['results' => []];
        if (!@$m->multi_query($sql)) {
            $out['error'] = $this->err($m);
            return $out;
        }
        while (true) {
            $r = $m->store_result();
            if ($r) {
                $res = ['columns' => $this->fields($r), 'rows' => $this->rows($r)];
                $r->free();
            } elseif ($m->errno) {
                $out['error'] = $this->err($m);
                return $out;
            } else {
                $res = ['affected' => $m->affected_rows, 'insert_id' => $m->insert_id];
            }
            $res['warnings'] = $m->warning_count;
            $out['results'][] = $res;
            if (!$m->more_results()) {
                break;
            }
            if (!@$m->next_result()) {
                $out['error'] = $this->err($m);
                break;
            }
        }
        return $out;
    }

    public function prepared($m, string $sql, array $params): array
    {
        $out = ['results' => []];
        $st = @$m->prepare($sql);
        if (!$st) {
            $out['error'] = $this->err($m);
            return $out;
        }
        if ($params) {
            $types = '';
            foreach ($params as $p) {
                $types .= is_int($p) ? 'i' : (is_float($p) ? 'd' : 's');
            }
            $st->bind_param($types, ...$params);
        }
        if (!@$st->execute()) {
            $out['error'] = $this->err($st);
            return $out;
        }
        while (true) {
            $r = $st->get_result();
            if ($r) {
                $res = ['columns' => $this->fields($r), 'rows' => $this->rows($r)];
            } elseif ($st->errno) {
                $out['error'] = $this->err($st);
                break;
            } else {
                $res = ['affected' => $st->affected_rows, 'insert_id' => $st->insert_id];
            }
            $res['warnings'] = $m->warning_count;
            $out['results'][] = $res;
            if (!$st->more_results()) {
                break;
            }
            if (!@$st->next_result()) {
                $out['error'] = $this->err($st);
                break;
            }
        }
        $st->close();
        return $out;
    }
}

cm_run(new MysqliDriver());
