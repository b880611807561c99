<?php
// Case runner shared by the PHP drivers (mysqli, PDO). A driver is an
// object with open($conf, $reconnect), id($conn), ping($conn),
// query($conn, $sql) and prepared($conn, $sql, $params); query and
// prepared return the step's transcript fields, and every method throws
// CmError for a failure it wants recorded.

class CmError extends Exception
{
    public $fields;

    public function __construct(array $fields)
    {
        parent::__construct(json_encode($fields));
        $this->fields = $fields;
    }
}

function cm_emit(array $o): void
{
    ksort($o);
    echo json_encode($o, JSON_UNESCAPED_UNICODE | JSON_UNESCAPED_SLASHES | JSON_INVALID_UTF8_SUBSTITUTE), "\n";
}

// cm_text renders a column value: a string (hex when it is not UTF-8), the
// type and value of a native number, or null for NULL.
function cm_text($v)
{
    if ($v === null) {
        return null;
    }
    if (is_string($v)) {
        return preg_match('//u', $v) ? $v : '0x' . bin2hex($v);
    }
    return gettype($v) . ':' . var_export($v, true);
}

// cm_param turns a case parameter into a PHP value: {"int": n} and
// {"double": x} are numbers, strings and null stay as they are.
function cm_param($p)
{
    if (is_array($p) && array_key_exists('int', $p)) {
        return (int)$p['int'];
    }
    if (is_array($p) && array_key_exists('double', $p)) {
        return (float)$p['double'];
    }
    return $p;
}

function cm_run($driver): void
{
    $conf = json_decode(file_get_contents($GLOBALS['argv'][1]), true);
    foreach ($conf['cases'] as $case) {
        cm_emit(['case' => $case['id'], 'event' => 'start']);
        $conns = [];
        $mainID = '';
        $reconnect = !empty($case['reconnect']);
        foreach ($case['steps'] as $i => $st) {
            $name = $st['conn'] ?? 'main';
            $out = ['case' => $case['id'], 'step' => $i, 'conn' => $name];
            try {
                if (array_key_exists('sleep', $st)) {
                    usleep((int)($st['sleep'] * 1e6));
                    $out['slept'] = $st['sleep'];
                } else {
                    if (!isset($conns[$name])) {
                        $conns[$name] = $driver->open($name === 'admin' ? $conf['admin'] : $conf['target'] + ['compress' => !empty($case['compress'])], $reconnect && $name !== 'admin');
                        if ($name === 'main') {
                            $mainID = $driver->id($conns[$name]);
                        }
                    }
                    $c = $conns[$name];
                    if (!empty($st['ping'])) {
                        $out['ping'] = $driver->ping($c);
                    } elseif (array_key_exists('prepare', $st)) {
                        $params = array_map('cm_param', $st['params'] ?? []);
                        $out += $driver->prepared($c, str_replace('{main_id}', $mainID, $st['prepare']), $params);
                    } else {
                        $out += $driver->query($c, str_replace('{main_id}', $mainID, $st['sql']));
                    }
                }
            } catch (CmError $e) {
                $out += $e->fields;
            } catch (Throwable $e) {
                $out['error'] = ['class' => get_class($e), 'code' => $e->getCode(), 'message' => $e->getMessage()];
            }
            cm_emit($out);
        }
        $conns = [];
        cm_emit(['case' => $case['id'], 'event' => 'end']);
    }
}
