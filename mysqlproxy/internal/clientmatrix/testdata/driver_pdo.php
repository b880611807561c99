<?php
// Runs the client matrix's cases with PHP's PDO (pdo_mysql, mysqlnd).
// Text steps run with emulated prepares (the text protocol); prepared
// steps with server-side ones. PDO has neither ping nor reconnect.

require __DIR__ . '/common.php';

class PdoDriver
{
    public function open(array $c, bool $reconnect)
    {
        $dsn = sprintf('mysql:host=%s;port=%d;dbname=%s;charset=utf8mb4', $c['host'], $c['port'], $c['database']);
        try {
            return new PDO($dsn, $c['user'], $c['password'], [
                PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION,
                PDO::ATTR_EMULATE_PREPARES => true,
                PDO::MYSQL_ATTR_MULTI_STATEMENTS => true,
                PDO::MYSQL_ATTR_LOCAL_INFILE => true,
                PDO::MYSQL_ATTR_COMPRESS => !empty($c['compress']),
            ]);
        } catch (PDOException $e) {
            throw new CmError(['error' => $this->err($e)]);
        }
    }

    public function id($pdo): string
    {
        return (string)$pdo->query('SELECT CONNECTION_ID()')->fetchColumn();
    }

    public function ping($pdo)
    {
        return 'unsupported';
    }

    private function err(PDOException $e): array
    {
        $i = $e->errorInfo;
        if (is_array($i) && count($i) >= 3) {
            return ['state' => $i[0], 'code' => $i[1], 'message' => $i[2]];
        }
        return ['class' => get_class($e), 'code' => $e->getCode(), 'message' => $e->getMessage()];
    }

    private function results(PDOStatement $st, array $out): array
    {
        try {
            do {
                $n = $st->columnCount();
                if ($n > 0) {
                    $cols = [];
                    for ($i = 0; $i < $n; $i++) {
                        $cols[] = $st->getColumnMeta($i);
                    }
                    $rows = [];
                    foreach ($st->fetchAll(PDO::FETCH_NUM) as $row) {
                        $rows[] = array_map('cm_text', $row);
                    }
                    $out['results'][] = ['columns' => $cols, 'rows' => $rows];
                } else {
                    $out['results'][] = ['affected' => $st->rowCount()];
                }
            } while ($st->nextRowset());
        } catch (PDOException $e) {
            $out['error'] = $this->err($e);
        }
        return $out;
    }

    public function query($pdo, string $sql): array
    {
        $out = ['results' => []];
        try {
            $st = $pdo->query($sql);
        } catch (PDOException $e) {
            $out['error'] = $this->err($e);
            return $out;
        }
        return $this->results($st, $out);
    }

    public function prepared($pdo, string $sql, array $params): array
    {
        $out = ['results' => []];
        // pdo_mysql takes the emulation setting from the connection at
        // prepare time, not from prepare's options.
        $pdo->setAttribute(PDO::ATTR_EMULATE_PREPARES, false);
        try {
            $st = $pdo->prepare($sql);
            foreach ($params as $i => $p) {
                $type = is_int($p) ? PDO::PARAM_INT : ($p === null ? PDO::PARAM_NULL : PDO::PARAM_STR);
                $st->bindValue($i + 1, $p, $type);
            }
            $st->execute();
        } catch (PDOException $e) {
            $out['error'] = $this->err($e);
            return $out;
        } finally {
            $pdo->setAttribute(PDO::ATTR_EMULATE_PREPARES, true);
        }
        return $this->results($st, $out);
    }
}

cm_run(new PdoDriver());
