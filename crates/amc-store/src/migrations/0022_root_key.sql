-- The push acknowledgements' key is retired: every key AMC signs or seals with is now derived
-- from one root secret (`root_key`, made on the next start). Acknowledgements handed out
-- before are refused once, and the push tells their batch again.
DELETE FROM settings WHERE key = 'push_ack_key';
